#!/usr/bin/env bats
# tokenize on overlong and endless lines (issue 15): memory bounded on any
# stream. A line longer than the limit is encoded in pieces cut at spaces
# when the tokenizer and the output allow it (same ids as whole), else it is
# refused with the file, line and --max-line-bytes.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  # text that stresses the cut places: runs of spaces, tabs, no-break
  # spaces, CJK, accents, contractions, special tokens
  /usr/bin/python3 - <<'PY'
import random
r = random.Random(15)
bits = ['low', 'lower', 'new', 'est', ' ', ' ', ' ', '  ', '   ', '\t', ' \t ', '\u00a0', '\u3000', '東京', 'café',
        'Straße', "'s", "'ll", "n't", '!!', ', ', '.', '123', '4.5', '<|endoftext|>', '[CLS]', '\u0301', 'Σ', 'x']
with open('long.txt', 'w') as f:
    for n in (30, 3000, 5000, 200, 7000):
        f.write(''.join(r.choice(bits) for _ in range(n)) + '\n')
PY
  head -c 20000 long.txt >train.txt
  train-bpe -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 --min-frequency 1 -o bl.json train.txt
  train-bpe -q --end-of-word-suffix '</w>' --unk-token '[UNK]' --vocab-size 300 --min-frequency 1 -o cl.json train.txt
  train-wordpiece -q --vocab-size 300 --min-frequency 1 -o wp.json train.txt
}

# the ids of long.txt with lines cut in pieces of about 300 bytes, against whole
same_cut() {
  local m="$1"; shift
  run tokenize -m "$m" "$@" long.txt
  [ "$status" -eq 0 ] || { echo "$m $*: $output"; return 1; }
  local whole="$output"
  run tokenize -m "$m" --max-line-bytes 300 "$@" long.txt
  [ "$status" -eq 0 ] || { echo "$m $* cut: $output"; return 1; }
  [ "$output" = "$whole" ] || { echo "$m $*: the cut encoding differs"; return 1; }
}

@test "tokenize: a line past --max-line-bytes is encoded in pieces, with the ids of the whole line" {
  for m in bl.json cl.json wp.json; do
    pad='<|endoftext|>'
    [ $m = cl.json ] && pad='[UNK]'
    [ $m = wp.json ] && pad='[PAD]'
    same_cut $m
    same_cut $m --output-format piece
    same_cut $m --no-special-tokens
    same_cut $m --special-tokens split
    same_cut $m --max-length 50
    same_cut $m --max-length 50 --padding max --pad-token "$pad" --type-ids --attention-mask
  done
  same_cut bl.json -z
  # the tokenizer file's own truncation, from the left
  /usr/bin/python3 -c 'import json; t = json.load(open("bl.json"))
t["truncation"] = {"direction": "Left", "max_length": 40, "strategy": "LongestFirst", "stride": 0}
json.dump(t, open("left.json", "w"))'
  same_cut left.json
  same_cut left.json --max-length 7
  # a token stream too
  tokenize -m bl.json --eot '<|endoftext|>' --output-format bin -o whole.bin long.txt
  tokenize -m bl.json --eot "<|endoftext|>" --output-format bin --max-line-bytes 300 -o cut.bin long.txt
  cmp whole.bin cut.bin
}

@test "tokenize: GPT-2 and BERT, lines cut in pieces give the reference tokenizers' ids" {
  need_shared
  for m in "$SHARED/vectors/tokenize/gpt2" "$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt"; do
    same_cut "$m"
    same_cut "$m" --max-length 20
  done
}

@test "tokenize: a 44 MB line is encoded in pieces: its memory does not grow with it" {
  for i in $(seq 1 4000); do printf 'lower newest widest naïve x1 it%s ' "$i"; done >piece.txt
  for i in $(seq 1 300); do cat piece.txt; done >big.txt
  echo >>big.txt
  # the peak resident memory of the tool (777 MB for this line before; the
  # sanitizers' shadow memory is not the tool's, so only the plain build)
  peak() { /usr/bin/python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"; }
  run peak "$NLPIPE_BIN/tokenize" -m bl.json -t 1 big.txt
  [ "${lines[0]%% *}" -eq 0 ]
  [ -n "${NLPIPE_ASAN:-}" ] || [ "${lines[0]##* }" -lt 200 ] || { echo "peak ${lines[0]##* } MB"; false; }
  # and the ids are those of the same text in pieces of about 1 MB
  tokenize -m bl.json big.txt | md5sum >a.sum
  tokenize -m bl.json --max-line-bytes 1000000 big.txt | md5sum >b.sum
  cmp a.sum b.sum
}

@test "tokenize: a stretch with no space to cut at is refused with the file and line" {
  { echo "low lower"; echo "low"; head -c 500 /dev/zero | tr '\0' 'x'; echo; } >nospace.txt
  run_split tokenize -m bl.json --max-line-bytes 100 nospace.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'nospace.txt' line 3: no space to cut the line at in 100 bytes from byte 14 (--max-line-bytes raises the limit)"* ]]
  # the lines before it were written
  [ "$output" = "$(head -2 nospace.txt | tokenize -m bl.json)" ]
  run tokenize -m bl.json --max-line-bytes 600 nospace.txt
  [ "$status" -eq 0 ]
  # endless input without a newline (the repro: /dev/zero) stops at 16 MiB
  run_split tokenize -m bl.json </dev/zero
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 1: no space to cut the line at in 16777216 bytes"* ]]
}

@test "tokenize: where a line cannot be cut, one longer than --max-line-bytes is refused and says why" {
  run_split tokenize -m bl.json --pair --max-line-bytes 100 long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'long.txt' line 2: longer than 100 bytes (--max-line-bytes raises the limit; with --pair a line is encoded whole)"* ]]
  run_split tokenize -m bl.json --padding longest --pad-token '<|endoftext|>' --max-line-bytes 100 long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"with --padding longest a line is encoded whole, in its batch"* ]]
  # a pipeline that looks across spaces: a byte-level pre-tokenizer without GPT-2's pattern
  sed 's/"use_regex": true/"use_regex": false/' bl.json >noregex.json
  run_split tokenize -m noregex.json --max-line-bytes 100 long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 2: longer than 100 bytes (--max-line-bytes raises the limit; this tokenizer's pipeline cannot be cut at spaces"* ]]
  # within the limit such lines are encoded whole
  run tokenize -m noregex.json --max-line-bytes 100000 long.txt
  [ "$status" -eq 0 ]
}

@test "tokenize -d: a line longer than --max-line-bytes is refused; endless input too" {
  tokenize -m bl.json long.txt >ids.txt
  run_split tokenize -m bl.json -d --max-line-bytes 1000 ids.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'ids.txt' line 2: longer than 1000 bytes (--max-line-bytes raises the limit)"* ]]
  run tokenize -m bl.json -d --max-line-bytes 100000 ids.txt
  [ "$status" -eq 0 ]
  run_split tokenize -m bl.json -d </dev/zero
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 1: longer than 16777216 bytes"* ]]
}
