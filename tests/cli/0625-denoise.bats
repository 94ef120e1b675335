#!/usr/bin/env bats
# pretrain --arch transformer --objective span|denoise (issue 28): T5's span
# corruption and BART's denoising on unlabelled text. Tiny models on the
# bundled package descriptions learn (validation loss down, token accuracy
# up); --show-examples prints what the model is asked to do (span: input and
# target give the text back; denoise: the target is the text); a run
# stopped by SIGINT resumes to the same weights across epochs; the tokens
# the objectives add travel with the checkpoint (translate -m and --init
# read it); misuse is a usage error. Each run takes a second or a few.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 800 -q -o "$W/tok.json" \
    "$D/lm-train.txt"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>,<mask>' --vocab-size 800 -q -o "$W/mask.json" \
    "$D/lm-train.txt"
  head -100 "$D/lm-train.txt" >"$W/small.txt"
  # the two objectives' runs the tests look at
  for obj in span denoise; do
    "$NLPIPE_BIN/pretrain" --arch transformer --objective $obj --preset tiny -t 1 --schedule inverse-sqrt --lr 3e-3 \
      --warmup 20 --batch-tokens 600 --steps 200 --eval-every 50 --dropout 0 --tokenizer "$W/tok.json" \
      --valid "$D/lm-valid.txt" -m "$W/$obj" --log "$W/$obj.tsv" "$D/lm-train.txt" 2>"$W/$obj.err"
  done
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  TINY=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600)
}

# the loss columns of a log (step, tokens, lr, loss, grad_norm, valid_*), without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# the validation rows of a log: step, valid_loss, valid_acc
valid_rows() { awk -F'\t' 'NR > 1 && $8 != "" { print $1, $8, $10 }' "$1"; }

learns() {
  local log="$1" first last
  head -1 "$log" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_ppl\tvalid_acc'
  [ "$(valid_rows "$log" | cut -d' ' -f1 | tr '\n' ' ')" = "50 100 150 200 " ]
  first="$(valid_rows "$log" | head -1)" last="$(valid_rows "$log" | tail -1)"
  # the loss falls by 0.3 nats or more, the accuracy rises by 3 points or more; ppl = exp(loss); acc in [0, 1]
  awk -v a="$first" -v b="$last" 'BEGIN { split(a, x, " "); split(b, y, " "); exit !(y[2] < x[2] - 0.3 && y[3] > x[3] + 0.03) }' ||
    { echo "validation $first -> $last"; false; }
  awk -F'\t' 'NR > 1 && $8 != "" { d = exp($8) - $9; if (d < 0) d = -d; if (d > 1e-3 * $9 || $10 < 0 || $10 > 1) exit 1 }' "$log"
}

@test "pretrain --objective span: a tiny transformer learns (validation loss down, token accuracy up); the sentinels go with the checkpoint" {
  learns "$W/span.tsv"
  grep -q "has no sentinel tokens: <extra_id_0> ... <extra_id_99> added as special tokens (ids 800-899)" "$W/span.err"
  grep -qE "valid loss [0-9.]+ ppl [0-9.]+ acc [0-9.]+" "$W/span.err"
  grep -qE "lm-train.txt': 1200 documents \(63501 tokens\), [0-9]+ texts of at most 70 tokens to corrupt" "$W/span.err"
  grep -qE "^pretrain:   [0-9]+ documents longer than --max-length 64 allows cut in several" "$W/span.err"
  # the run's tokenizer has the 100 sentinels as special tokens, the model their rows
  run python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))
a = {x["content"]: x for x in t["added_tokens"]}
ok = all(a["<extra_id_%d>" % k]["id"] == 800 + k and a["<extra_id_%d>" % k]["special"] for k in range(100))
print("ok" if ok and "<extra_id_100>" not in a else "bad")' "$W/span/latest/tokenizer.json"
  [ "$output" = ok ]
  grep -qx 'objective: span' "$W/span/latest/run.yaml"
  grep -qx 'noise-density: 0.15' "$W/span/latest/run.yaml"
  grep -qx 'sentinels: 100' "$W/span/latest/run.yaml"
  ! grep -q 'valid-bleu' "$W/span/latest/run.yaml"
  # translate reads the checkpoint: one line out per line in
  printf '%s\n' 'This module provides a <extra_id_0> to invert the key/value of an object.' 'Tools for <extra_id_0> files.' |
    translate -m "$W/span" -b 2 >"$T/out"
  [ "$(wc -l <"$T/out")" -eq 2 ]
}

@test "pretrain --objective denoise: a tiny transformer learns (validation loss down, token accuracy up); <mask> goes with the checkpoint" {
  learns "$W/denoise.tsv"
  grep -q "'.*tok.json' has no <mask>: added as a special token, id 800" "$W/denoise.err"
  grep -qE "texts of at most 63 tokens to corrupt" "$W/denoise.err"
  [ "$(grep -o '"<mask>"' "$W/denoise/latest/tokenizer.json" | wc -l)" -eq 1 ]
  grep -qx 'objective: denoise' "$W/denoise/latest/run.yaml"
  grep -qx 'mask-ratio: 0.3' "$W/denoise/latest/run.yaml"
  grep -qx 'permute-sentences: "true"' "$W/denoise/latest/run.yaml"
  echo 'Tools for <mask> files.' | translate -m "$W/denoise/best" >"$T/out"
  [ "$(wc -l <"$T/out")" -eq 1 ]
  # a tokenizer with <mask> keeps it: nothing added, the model's vocabulary is the tokenizer's
  run_split pretrain "${TINY[@]}" -v --objective denoise --steps 2 --tokenizer "$W/mask.json" -m "$T/m" "$W/small.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *"added as a special token"* ]]
  run python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))
print([x["id"] for x in t["added_tokens"] if x["content"] == "<mask>"])' "$T/m/latest/tokenizer.json"
  [ "$output" = "[3]" ]
  run_split pretrain --resume "$T/m" --dry-run
  [[ "$output" == *"parameters: "*"(284672 floats)"* ]] || { echo "$output"; false; }
}

# the examples' text against the documents (one a line): for span, each
# sentinel of the input replaced by its text in the target gives the line;
# for denoise, the target is the line and the input has masks. Lines of
# ASCII only (a span may cut a character's bytes, shown as U+FFFD).
check_examples() {
  cat >"$BATS_TEST_TMPDIR/check.py" <<'PY'
import re, sys
obj, lines, n = sys.argv[1], open(sys.argv[2], encoding='utf-8').read().split('\n'), int(sys.argv[3])
out = sys.stdin.read()
blocks = out.rstrip('\n').split('\n\n')
assert len(blocks) == n, len(blocks)
checked = 0
for i, b in enumerate(blocks):
    m = re.fullmatch(r'==> example (\d+): document (\d+), (\d+) tokens <==\ninput:  (.*)\ntarget: (.*)', b)
    assert m and int(m.group(1)) == i + 1, b
    doc, inp, tgt = int(m.group(2)), m.group(4), m.group(5)
    assert inp.endswith('</s>') and tgt.endswith('</s>'), b
    inp, tgt, line = inp[:-4], tgt[:-4], lines[doc - 1]
    if not line.isascii():
        continue
    if obj == 'span':
        parts = re.split(r'<extra_id_(\d+)>', tgt)
        assert parts[0] == '' and parts[-1] == '', tgt
        ids = [int(x) for x in parts[1::2]]
        assert ids == list(range(len(ids))) and len(ids) >= 2, tgt
        assert [int(x) for x in re.findall(r'<extra_id_(\d+)>', inp)] == ids[:-1], inp
        span = dict(zip(ids, parts[2::2]))
        back = re.sub(r'<extra_id_(\d+)>', lambda x: span[int(x.group(1))], inp)
        assert back == line, (back, line)
    else:
        assert tgt == line, (tgt, line)
        assert '<mask>' in inp, inp
        at = 0  # without permutation the kept text is the line's, in order
        for piece in inp.split('<mask>'):
            k = line.find(piece, at)
            assert k >= 0, (piece, line)
            at = k + len(piece)
    checked += 1
assert checked >= n * 3 // 4, checked
print(checked)
PY
  python3 "$BATS_TEST_TMPDIR/check.py" "$@"
}

@test "pretrain --show-examples: span's input and target give each text back; denoise's target is the text; nothing is written" {
  big=(--max-positions 512 --max-length 512) # no document cut: each example is a line of the file
  run_split pretrain --arch transformer --objective span --preset tiny "${big[@]}" --tokenizer "$W/tok.json" \
    --show-examples 40 -m "$T/none" "$D/lm-train.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  check_examples span "$D/lm-train.txt" 40 <<<"$output"
  [ ! -e "$T/none" ]
  run_split pretrain --arch transformer --objective denoise --no-permute-sentences --preset tiny "${big[@]}" \
    --tokenizer "$W/tok.json" --show-examples 40 -m "$T/none" "$D/lm-train.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  check_examples denoise "$D/lm-train.txt" 40 <<<"$output"
  [ ! -e "$T/none" ]
  # the examples are epoch 1's of --seed: the same again, others for another seed
  a="$(pretrain --arch transformer --objective span --preset tiny --tokenizer "$W/tok.json" --show-examples 5 -q "$W/small.txt")"
  b="$(pretrain --arch transformer --objective span --preset tiny --tokenizer "$W/tok.json" --show-examples 5 -q "$W/small.txt")"
  c="$(pretrain --arch transformer --objective span --preset tiny --tokenizer "$W/tok.json" --show-examples 5 -q --seed 1 "$W/small.txt")"
  [ "$a" = "$b" ] && [ "$a" != "$c" ]
  # sentence permutation: with masking off the input is the text's sentences in another order
  run_split pretrain --arch transformer --objective denoise --mask-ratio 0 --preset tiny --tokenizer "$W/tok.json" \
    --show-examples 100 "$W/small.txt"
  [ "$status" -eq 0 ]
  python3 -c 'import re, sys
moved = 0
for b in sys.stdin.read().rstrip("\n").split("\n\n"):
    i, t = re.search(r"input:  (.*)\ntarget: (.*)", b).groups()
    assert "<mask>" not in i and sorted(i) == sorted(t), b
    moved += i != t
assert moved >= 5, moved' <<<"$output"
  # more than there are: all of them, and a note
  run_split pretrain --arch transformer --objective span --preset tiny --tokenizer "$W/tok.json" --show-examples 100000 \
    "$W/small.txt"
  [ "$status" -eq 0 ]
  [ "$(grep -c '^==> example' <<<"$output")" -eq "$(sed -n 's/.*(5806 tokens), \([0-9]*\) texts.*/\1/p' <<<"$stderr")" ]
  [[ "$stderr" == *"--show-examples 100000: the training data has "*" texts to corrupt"* ]]
}

@test "pretrain --objective span and denoise: a run stopped by SIGINT resumes to the same losses and weights, across epochs" {
  for obj in span denoise; do
    # 100 documents: about 10 batches an epoch, so 40 steps make 4 epochs of pairs drawn afresh
    args=("${TINY[@]}" --objective $obj --steps 40 --save-every 8 --keep 0 --eval-every 20 --tokenizer "$W/tok.json"
          --valid "$D/lm-valid.txt" "$W/small.txt")
    run_split pretrain "${args[@]}" -m "$T/$obj-a" --log "$T/$obj-a.tsv"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    (with_sigint "$NLPIPE_BIN/pretrain" "${args[@]}" -m "$T/$obj-b" --log "$T/$obj-b.tsv" 2>/dev/null &
      p=$!; while [ ! -d "$T/$obj-b/step-00000008" ] && kill -0 $p 2>/dev/null; do sleep 0.02; done
      kill -INT "$p"; rc=0; wait "$p" || rc=$?; echo "rc=$rc" >"$T/rc")
    grep -qE 'rc=(0|130)' "$T/rc"
    grep -q 'rc=130' "$T/rc" || echo "# $obj: the run ended before SIGINT came" >&3
    run_split pretrain --resume "$T/$obj-b" -q
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(losses "$T/$obj-a.tsv")" = "$(losses "$T/$obj-b.tsv" | awk '!seen[$1]++')" ] ||
      { diff <(losses "$T/$obj-a.tsv") <(losses "$T/$obj-b.tsv"); false; }
    cmp "$T/$obj-a/step-00000040/model.safetensors" "$T/$obj-b/step-00000040/model.safetensors"
    # another seed draws other corruptions (and another order): other losses
    run_split pretrain "${args[@]}" --steps 8 --seed 1 -m "$T/$obj-c" --log "$T/$obj-c.tsv"
    [ "$(losses "$T/$obj-c.tsv" | sed -n 2,9p)" != "$(losses "$T/$obj-a.tsv" | sed -n 2,9p)" ]
  done
}

@test "pretrain --init: a span run continues with denoise (its vocabulary grows by <mask>) and with translation" {
  run_split pretrain "${TINY[@]}" -v --objective denoise --init "$W/span" --steps 3 -m "$T/d" "$W/small.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"has no <mask>: added as a special token, id 900"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"its vocabulary grows from 900 to 901 ids"* ]]
  [ "$(grep -o '"<mask>"' "$T/d/latest/tokenizer.json" | wc -l)" -eq 1 ]
  [ "$(grep -o '"<extra_id_[0-9]*>"' "$T/d/latest/tokenizer.json" | wc -l)" -eq 100 ]
  # span again: nothing to add
  run_split pretrain "${TINY[@]}" -v --objective span --init "$W/span" --steps 3 -m "$T/s" "$W/small.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *"added as special"* ]]
  # translation from the span checkpoint, then translate
  paste "$D/src.en" "$D/tgt.de" >"$T/pairs.tsv"
  run_split pretrain "${TINY[@]}" --init "$W/span" --steps 5 -m "$T/t" "$T/pairs.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  head -3 "$D/src.en" | translate -m "$T/t" >"$T/out"
  [ "$(wc -l <"$T/out")" -eq 3 ]
}

@test "pretrain --objective: misuse is a usage error naming the option; texts too short are skipped and counted" {
  base=(--preset tiny --tokenizer "$W/tok.json" --steps 1 -m "$T/r" "$W/small.txt")
  t=(--arch transformer)
  check() { # status, message, arguments...
    local want="$1" msg="$2"
    shift 2
    run_split pretrain "$@"
    [ "$status" -eq "$want" ] || { echo "$* -> $status: $stderr"; false; }
    [[ "$stderr" == *"$msg"* ]] || { echo "$* -> $stderr"; false; }
  }
  check 2 "--objective is for --arch transformer" --objective span "${base[@]}"
  check 2 "--objective is for --arch transformer" --arch bert --objective translate "${base[@]}"
  check 2 "--noise-density is for --arch transformer --objective span" "${t[@]}" --noise-density 0.2 "${base[@]}"
  check 2 "--mean-span is for --arch transformer --objective span" --mean-span 2 "${base[@]}"
  check 2 "--mask-ratio is for --arch transformer --objective denoise" "${t[@]}" --objective span --mask-ratio 0.2 "${base[@]}"
  check 2 "--permute-sentences is for --arch transformer --objective denoise" "${t[@]}" --objective span --no-permute-sentences "${base[@]}"
  check 2 "--sentinels is for --arch transformer --objective span" "${t[@]}" --objective denoise --sentinels 10 "${base[@]}"
  check 2 "--poisson-lambda is for --arch transformer --objective denoise" "${t[@]}" --poisson-lambda 2 "${base[@]}"
  check 2 "--show-examples is for --arch transformer --objective span or denoise" "${t[@]}" --show-examples 2 "${base[@]}"
  check 2 "--noise-density: 0 is out of range" "${t[@]}" --objective span --noise-density 0 "${base[@]}"
  check 2 "--noise-density: 1 is out of range" "${t[@]}" --objective span --noise-density 1 "${base[@]}"
  check 2 "--mean-span: 0.5 is out of range" "${t[@]}" --objective span --mean-span 0.5 "${base[@]}"
  check 2 "--sentinels: 1 is out of range" "${t[@]}" --objective span --sentinels 1 "${base[@]}"
  check 2 "--poisson-lambda: 0 is out of range" "${t[@]}" --objective denoise --poisson-lambda 0 "${base[@]}"
  check 2 "--mask-ratio: 1.5 is out of range" "${t[@]}" --objective denoise --mask-ratio 1.5 "${base[@]}"
  check 2 "--show-examples: 0 is out of range" "${t[@]}" --objective denoise --show-examples 0 "${base[@]}"
  check 2 "--objective: 'spam' is not one of translate, span or denoise" "${t[@]}" --objective spam "${base[@]}"
  check 2 "nothing to denoise" "${t[@]}" --objective denoise --mask-ratio 0 --no-permute-sentences "${base[@]}"
  check 2 "--objective span reads unlabelled text" "${t[@]}" --objective span --src "$W/small.txt" --tgt "$W/small.txt" \
    --preset tiny --tokenizer "$W/tok.json" --steps 1 -m "$T/r"
  check 2 "--max-length 3: too short" "${t[@]}" --objective span --max-length 3 "${base[@]}"
  check 2 "--batch-tokens 30: a batch must hold a text of --max-length 64" "${t[@]}" --objective span --batch-tokens 30 "${base[@]}"
  check 2 "--objective denoise reads text: give --tokenizer" "${t[@]}" --objective denoise --preset tiny --steps 1 \
    -m "$T/r" "$W/small.txt"
  [ ! -e "$T/r" ]
  # a config file's bad value: exit 3 naming it
  printf 'noise-density: 2\n' >"$T/c.yaml"
  check 3 "c.yaml" "${t[@]}" --objective span -c "$T/c.yaml" "${base[@]}"
  # a resumed run keeps its objective and its tokenizer
  check 2 "--objective denoise: the run '$W/span' trains with --objective span" --resume "$W/span" --objective denoise
  check 3 "lacks the sentinel tokens (<extra_id_0> first)" --resume "$W/span" --tokenizer "$W/tok.json" --steps 300
  # a sentencepiece model takes no added tokens: it says so (exit 3)
  if [ -f "$SHARED/peers/twins/spm8k.model" ]; then
    check 3 "cannot add <mask>: a sentencepiece model takes no added tokens" "${t[@]}" --objective denoise --preset tiny \
      --tokenizer "$SHARED/peers/twins/spm8k.model" --show-examples 1 "$W/small.txt"
  fi
  # documents too short to corrupt are skipped and counted; none left is an error
  { head -20 "$W/small.txt"; echo 'x'; echo 'y'; } >"$T/short.txt"
  run_split pretrain "${t[@]}" --objective span --preset tiny --tokenizer "$W/tok.json" --show-examples 1 "$T/short.txt"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"2 texts of fewer than 2 tokens skipped, too short to corrupt (2 whole documents)"* ]] || { echo "$stderr"; false; }
  printf 'x\ny\n' >"$T/none.txt"
  check 1 "none.txt': no text to corrupt: 2 documents, none of 2 tokens or more" "${t[@]}" --objective span --preset tiny \
    --tokenizer "$W/tok.json" --steps 1 -m "$T/r" "$T/none.txt"
  [ ! -e "$T/r" ]
}
