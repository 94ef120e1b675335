#!/usr/bin/env bats
# train-bpe: every option, the output formats, and bad input.

load helper

# the reference corpora and HF's results on them (../shared, else tests/data/golden)
train() { ref_path vectors/tokenize/train; }
corpus() { echo "$(train)/$1.corpus.txt"; }

# merges of a tokenizer.json, one "a b" per line
merges() { python3 -c 'import json,sys; [print(" ".join(m)) for m in json.load(open(sys.argv[1]))["model"]["merges"]]' "$1"; }
vocab() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["model"]["vocab"]; [print(k+"\t"+str(i)) for k,i in sorted(v.items(), key=lambda x: x[1])]' "$1"; }

@test "train-bpe: HF's merges and vocabulary on the reference corpora (plain and --byte-level --no-byte-alphabet)" {
  for c in hug ties overlap; do
    train-bpe --min-frequency 0 -q "$(corpus $c)" -o "$BATS_TEST_TMPDIR/$c.json"
    [ "$(merges "$BATS_TEST_TMPDIR/$c.json")" = "$(cat "$(train)/$c.bpe.merges.txt")" ]
    [ "$(vocab "$BATS_TEST_TMPDIR/$c.json")" = "$(cat "$(train)/$c.bpe.vocab.tsv")" ]
    train-bpe --byte-level --no-byte-alphabet --min-frequency 0 -q "$(corpus $c)" -o "$BATS_TEST_TMPDIR/$c.b.json"
    [ "$(merges "$BATS_TEST_TMPDIR/$c.b.json")" = "$(cat "$(train)/$c.bytebpe.merges.txt")" ]
    [ "$(vocab "$BATS_TEST_TMPDIR/$c.b.json")" = "$(cat "$(train)/$c.bytebpe.vocab.tsv")" ]
  done
}

@test "train-bpe --vocab-size and --min-frequency (default 2) bound the merges" {
  train-bpe --vocab-size 10 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/a.json"
  [ "$(merges "$BATS_TEST_TMPDIR/a.json")" = $'u g\nu n\nh ug' ]
  run_split train-bpe --min-frequency 6 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/b.json"
  [ "$status" -eq 0 ]
  [ "$(merges "$BATS_TEST_TMPDIR/b.json" | wc -l)" -eq 4 ]
  [[ "$stderr" == *"vocabulary of 11 tokens, not 30000"*"--min-frequency"* ]]
  train-bpe -q "$(corpus hug)" -o "$BATS_TEST_TMPDIR/c.json"
  [ "$(merges "$BATS_TEST_TMPDIR/c.json" | wc -l)" -eq 7 ]
}

@test "train-bpe --vocab-size smaller than the alphabet: exit 1 (it depends on the data), with the size needed" {
  run_split train-bpe --vocab-size 5 "$(corpus hug)"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"vocabulary size 5 is smaller than the 0 special tokens plus the 7 characters of the alphabet: this data needs a vocabulary of at least 7"* ]]
  run_split train-bpe --byte-level --vocab-size 200 "$(corpus hug)"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"plus the 256 characters"*"at least 256"* ]]
  run_split train-bpe --vocab-size 0 "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-bpe --special-tokens take the first ids and are cut out of the text" {
  { cat "$(corpus hug)"; echo 'hug<|endoftext|>pug'; } >"$BATS_TEST_TMPDIR/in.txt"
  train-bpe -q --special-tokens '<|endoftext|>, [X]' --min-frequency 0 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/s.json"
  [ "$(vocab "$BATS_TEST_TMPDIR/s.json" | head -3)" = $'<|endoftext|>\t0\n[X]\t1\nb\t2' ]
  run grep -c '"special": true' "$BATS_TEST_TMPDIR/s.json"
  [ "$output" -eq 2 ]
  # no piece of the special token's text was learned
  [ "$(vocab "$BATS_TEST_TMPDIR/s.json" | tail -n +3 | grep -c '[<|>]')" -eq 0 ]
}

@test "train-bpe --unk-token: classic BPE maps unseen characters to it" {
  train-bpe -q --unk-token '[UNK]' --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/u.json"
  [ "$(vocab "$BATS_TEST_TMPDIR/u.json" | head -1)" = $'[UNK]\t0' ]
  run tokenize -m "$BATS_TEST_TMPDIR/u.json" --output-format piece <<<"thug"
  [ "$output" = "[UNK] hug" ]
  run_split train-bpe --byte-level --unk-token '[UNK]' "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-bpe --limit-alphabet keeps the most frequent characters" {
  train-bpe -q --limit-alphabet 4 --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/l.json"
  # u 36, g 20, p 17, n 16 (h 15, b 4 and s 5 are dropped)
  [ "$(vocab "$BATS_TEST_TMPDIR/l.json" | head -4 | cut -f1 | tr '\n' ' ')" = "g n p u " ]
}

@test "train-bpe --byte-level: 256-byte alphabet by default (--byte-alphabet), any byte encodable" {
  train-bpe -q --byte-level --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/b.json"
  [ "$(vocab "$BATS_TEST_TMPDIR/b.json" | wc -l)" -eq 263 ]
  [ "$(merges "$BATS_TEST_TMPDIR/b.json")" = "$(cat "$(train)/hug.bytebpe.merges.txt")" ]
  train-bpe -q --byte-level --byte-alphabet --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/b2.json"
  cmp "$BATS_TEST_TMPDIR/b.json" "$BATS_TEST_TMPDIR/b2.json"
  printf 'héllo wörld \xf0\x9f\xa4\x97\n' >"$BATS_TEST_TMPDIR/x.txt"
  tokenize -m "$BATS_TEST_TMPDIR/b.json" "$BATS_TEST_TMPDIR/x.txt" | tokenize -m "$BATS_TEST_TMPDIR/b.json" -d | cmp - "$BATS_TEST_TMPDIR/x.txt"
}

@test "train-bpe --end-of-word-suffix and --continuing-subword-prefix" {
  train-bpe -q --end-of-word-suffix '</w>' --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/e.json"
  [ "$(merges "$BATS_TEST_TMPDIR/e.json" | head -1)" = "p u" ]
  grep -q '"type": "BPEDecoder"' "$BATS_TEST_TMPDIR/e.json"
  run tokenize -m "$BATS_TEST_TMPDIR/e.json" <<<"hug pun" 
  run tokenize -m "$BATS_TEST_TMPDIR/e.json" -d <<<"$output"
  [ "$output" = "hug pun" ]
  train-bpe -q --continuing-subword-prefix '##' --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ "$(merges "$BATS_TEST_TMPDIR/p.json" | head -1)" = "##u ##g" ]
  run_split train-bpe --end-of-word-suffix '' "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-bpe --format gpt2, hf, codes, json: each reads back to the same tokenization" {
  d="$BATS_TEST_TMPDIR"
  train-bpe -q --byte-level --min-frequency 0 "$(corpus overlap)" -o "$d/o.json"
  train-bpe -q --byte-level --min-frequency 0 --format gpt2 "$(corpus overlap)" -o "$d/gpt2"
  train-bpe -q --byte-level --min-frequency 0 --format hf "$(corpus overlap)" -o "$d/hf"
  [ -f "$d/gpt2/encoder.json" ] && [ -f "$d/gpt2/vocab.bpe" ] && [ -f "$d/hf/vocab.json" ] && [ -f "$d/hf/merges.txt" ]
  [ "$(head -1 "$d/gpt2/vocab.bpe")" = "#version: 0.2" ]
  want="$(tokenize -m "$d/o.json" <"$(corpus overlap)")"
  [ "$(tokenize -m "$d/gpt2" <"$(corpus overlap)")" = "$want" ]
  [ "$(tokenize -m "$d/hf" <"$(corpus overlap)")" = "$want" ]
  train-bpe -q --format codes --min-frequency 0 "$(corpus hug)" -o "$d/codes"
  [ "$(head -2 "$d/codes")" = $'#version: 0.2\np u' ]
  run tokenize -m "$d/codes" --output-format piece <<<"hugs pun"
  [ "$output" = "hugs</w> pun</w>" ]
  train-bpe -q --format json --min-frequency 0 "$(corpus hug)" >"$d/stdout.json"
  grep -q '"version": "1.0"' "$d/stdout.json"
}

@test "train-bpe --format misuse: gpt2 needs --byte-level and a directory; codes no --byte-level" {
  run_split train-bpe --format gpt2 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/g"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--format gpt2 holds byte-level BPE"* ]]
  run_split train-bpe --byte-level --format hf "$(corpus hug)"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"give a directory with -o"* ]]
  run_split train-bpe --byte-level --format codes "$(corpus hug)"
  [ "$status" -eq 2 ]
  run_split train-bpe --format yaml "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-bpe -i, several FILE arguments, standard input, --max-sentences" {
  train-bpe -q --min-frequency 0 -i "$(corpus hug)" "$(corpus ties)" -o "$BATS_TEST_TMPDIR/two.json"
  cat "$(corpus hug)" "$(corpus ties)" | train-bpe -q --min-frequency 0 -o "$BATS_TEST_TMPDIR/stdin.json"
  cmp "$BATS_TEST_TMPDIR/two.json" "$BATS_TEST_TMPDIR/stdin.json"
  head -10 "$(corpus hug)" >"$BATS_TEST_TMPDIR/ten.txt"
  train-bpe -q --min-frequency 0 --max-sentences 10 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/m.json"
  train-bpe -q --min-frequency 0 "$BATS_TEST_TMPDIR/ten.txt" -o "$BATS_TEST_TMPDIR/t.json"
  cmp "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json"
}

@test "train-bpe -t: the output does not depend on the thread count" {
  need_shared
  head -c 2000000 "$SHARED/data/lm/train.txt" >"$BATS_TEST_TMPDIR/in.txt"
  train-bpe -q --byte-level --vocab-size 3000 -t 1 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/t1.json"
  train-bpe -q --byte-level --vocab-size 3000 --threads 2 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/t2.json"
  cmp "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/t2.json"
  run_split train-bpe -t -2 "$BATS_TEST_TMPDIR/in.txt"
  [ "$status" -eq 2 ]
}

@test "train-bpe --progress reports on stderr (share, rate, time left); --no-progress and the default off a terminal are silent" {
  run_split train-bpe --progress --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  # the input's size is known: the share read, the rate and the time left (or taken)
  last="$(tr '\r' '\n' <<<"$stderr" | grep 'counting words' | tail -1)"
  [[ "$last" =~ counting\ words:\ 100%\ of\ 0\.0\ MB,\ [0-9.]+\ MB/s,\ [0-9.]+\ s,\ 36\ lines ]] || { echo "$last"; false; }
  # training stops before --vocab-size: the last line says where it came to
  last="$(tr '\r' '\n' <<<"$stderr" | grep merging | tail -1)"
  [[ "$last" =~ merging:\ 14\ tokens,\ [0-9]+\ merges/s,\ [0-9.]+\ s,\ 7\ merges ]] || { echo "$last"; false; }
  run_split train-bpe --no-progress -q --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ -z "$stderr" ]
  run_split train-bpe -q --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ -z "$stderr" ]
}

@test "train-bpe: an empty corpus or one of white space only is an error (exit 1)" {
  run_split train-bpe </dev/null
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"no words to learn from: the input is empty"* ]]
  run_split train-bpe <<<$'   \n\t\n'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"only white space"* ]]
  [ -z "$output" ]
}

@test "train-bpe: a missing input is an I/O error; an unwritable output leaves nothing behind" {
  run_split train-bpe "$BATS_TEST_TMPDIR/missing.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot open '$BATS_TEST_TMPDIR/missing.txt'"* ]]
  run_split train-bpe -o "$BATS_TEST_TMPDIR/no/such/dir/t.json" <<<"a b a b"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot create"* ]]
}

@test "train-bpe: invalid UTF-8 is replaced with a warning; --strict names file, line and byte" {
  printf 'ab ab\nab \xff ab\n' >"$BATS_TEST_TMPDIR/bad.txt"
  run_split train-bpe --min-frequency 0 "$BATS_TEST_TMPDIR/bad.txt" -o "$BATS_TEST_TMPDIR/x.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"replaced 1 invalid UTF-8 sequence with U+FFFD (the first at '$BATS_TEST_TMPDIR/bad.txt' line 2 byte 9)"* ]]
  run_split train-bpe --strict "$BATS_TEST_TMPDIR/bad.txt" -o "$BATS_TEST_TMPDIR/x.json"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bad.txt' line 2 byte 9: invalid UTF-8"* ]]
}

@test "train-bpe: a NUL byte is refused as a tokenizer.json token (while reading), not written as a broken file" {
  printf 'a\0b a\0b ab\n' >"$BATS_TEST_TMPDIR/nul.txt"
  run_split train-bpe --min-frequency 1 -o "$BATS_TEST_TMPDIR/nul.json" "$BATS_TEST_TMPDIR/nul.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"nul.txt' line 1 byte 1: a NUL byte"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/nul.json" ]
  # subword-nmt codes can hold it, and read back
  train-bpe -q --min-frequency 1 --format codes -o "$BATS_TEST_TMPDIR/nul.codes" "$BATS_TEST_TMPDIR/nul.txt"
  tokenize -m "$BATS_TEST_TMPDIR/nul.codes" <"$BATS_TEST_TMPDIR/nul.txt" >"$BATS_TEST_TMPDIR/nul.ids"
  tokenize -m "$BATS_TEST_TMPDIR/nul.codes" -d <"$BATS_TEST_TMPDIR/nul.ids" | cmp - "$BATS_TEST_TMPDIR/nul.txt"
}

@test "train-bpe: special tokens, --unk-token and the affixes must be valid UTF-8 (usage error before training)" {
  for opt in --special-tokens --unk-token --end-of-word-suffix --continuing-subword-prefix; do
    run_split train-bpe "$opt" $'x\xff' --min-frequency 1 -o "$BATS_TEST_TMPDIR/u.json" <<<"hug pug"
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"train-bpe: $opt: invalid UTF-8 at byte 1"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/u.json" ]
  done
}

@test "train-bpe -o into a named pipe (or a device such as /dev/null) writes into it, never replaces it" {
  mkfifo "$BATS_TEST_TMPDIR/fifo"
  timeout 20 cat "$BATS_TEST_TMPDIR/fifo" >"$BATS_TEST_TMPDIR/got.json" &
  run train-bpe -q --min-frequency 1 -o "$BATS_TEST_TMPDIR/fifo" <<<"hug hug pug"
  wait
  [ "$status" -eq 0 ]
  [ -p "$BATS_TEST_TMPDIR/fifo" ]
  run tokenize -m "$BATS_TEST_TMPDIR/got.json" --output-format piece <<<"hug"
  [ "$output" = "hug" ]
}

@test "train-bpe: a NUL byte in classic-BPE data is found while reading: file, line and byte, exit 1, what works" {
  printf 'hug pug\nhug p\0ug\nbun\n' >"$BATS_TEST_TMPDIR/nul.txt"
  run_split train-bpe --min-frequency 0 "$BATS_TEST_TMPDIR/nul.txt" -o "$BATS_TEST_TMPDIR/n.json"
  [ "$status" -eq 1 ]
  [[ "$stderr" == "train-bpe: '$BATS_TEST_TMPDIR/nul.txt' line 2 byte 13: a NUL byte: "*"--byte-level"*"tr -d"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/n.json" ]
  # byte-level BPE learns it as a byte; subword-nmt codes are text that holds it
  run_split train-bpe -q --byte-level --min-frequency 0 "$BATS_TEST_TMPDIR/nul.txt" -o "$BATS_TEST_TMPDIR/b.json"
  [ "$status" -eq 0 ]
}

@test "train-bpe -o onto a symbolic link replaces its target and keeps the link; --in-place is accepted" {
  cd "$BATS_TEST_TMPDIR"
  printf '{}\n' >real.json && ln -s real.json link.json
  train-bpe -q --min-frequency 0 --in-place -o link.json "$(corpus hug)"
  [ -L link.json ]
  [ "$(merges real.json)" = "$(cat "$(train)/hug.bpe.merges.txt")" ]
}

@test "train-bpe --progress from a pipe: no share of an unknown size, the bytes and rate instead" {
  run_split bash -c 'cat "$1" | train-bpe --progress --min-frequency 0 -o "$2"' _ "$(corpus hug)" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  last="$(tr '\r' '\n' <<<"$stderr" | grep 'counting words' | tail -1)"
  [[ "$last" =~ counting\ words:\ 0\.0\ MB,\ [0-9.]+\ MB/s,\ [0-9.]+\ s,\ 36\ lines ]] || { echo "$last"; false; }
  [[ "$last" != *%* ]]
}

@test "train-bpe --progress while merging: the share of --vocab-size, merges per second and the time left" {
  for i in $(seq 1 2000); do echo "w${i}x$((i * 7)) q$((i % 89))z"; done >"$BATS_TEST_TMPDIR/c.txt"
  run_split train-bpe --progress --vocab-size 600 --min-frequency 1 "$BATS_TEST_TMPDIR/c.txt" -o "$BATS_TEST_TMPDIR/c.json"
  [ "$status" -eq 0 ]
  tr '\r' '\n' <<<"$stderr" | grep -Eq '^train-bpe: merging: [0-9]+% of 600 tokens, [0-9]+ merges/s, [^,]+ left, 256 merges' ||
    { echo "$stderr" | tr '\r' '\n'; false; }
}
