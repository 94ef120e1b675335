#!/usr/bin/env bats
# How pretrain's GPT data flows (issue 29): token streams mapped, text
# tokenized once into a cache in RUN/data and mapped, a pipe through a
# shuffle buffer. The same loss sequence from text in memory, the cache
# (made and reused), a mapped stream and a pipe shorter than its buffer; a
# cache reused only for the same text and tokenizer; an endless pipe trains
# and stops; a pipe cannot be replayed on --resume and says so; a cache that
# cannot be written leaves nothing behind.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/src.en" "$D/tgt.de" >corpus.txt
  head -40 "$D/ref.de" >valid.txt
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 500 -o tok.json corpus.txt
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 450 -o tok2.json corpus.txt
  "$NLPIPE_BIN/tokenize" -m tok.json --output-format bin -o corpus.bin corpus.txt
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  cd "$W"
  R=(--preset tiny -t 1 --no-progress --max-length 32 -B 4 --steps 8 --eval-every 4 --tokenizer tok.json --valid valid.txt)
}

losses() { cut -f1,5,8 "$1"; }

@test "the same loss sequence from text in memory, the cache made and reused, a mapped stream and a pipe" {
  run_split pretrain "${R[@]}" --no-cache --log "$T/mem.tsv" -m "$T/mem" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ ! -e "$T/mem/data" ]
  run_split pretrain "${R[@]}" --log "$T/made.tsv" -m "$T/c" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"'corpus.txt': tokenized into a cache in '$T/c/data'"* ]] || { echo "$stderr"; false; }
  ls "$T/c/data" | grep -q '^corpus\.txt\.[0-9a-f]*\.[0-9a-f]*\.bin$'
  # the cache is a token stream of the tokenizer: tokenize decodes it back to the text
  "$NLPIPE_BIN/tokenize" -m tok.json -d "$T"/c/data/corpus.txt.*.bin | cmp - corpus.txt
  rm -rf "$T"/c/step-* "$T/c/latest" "$T/c/best"
  run_split pretrain "${R[@]}" --log "$T/reused.tsv" -m "$T/c" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *"tokenized into a cache"* ]] || { echo "$stderr"; false; }
  run_split pretrain "${R[@]}" --log "$T/mapped.tsv" -m "$T/s" corpus.bin
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"corpus.bin: "*" tokens mapped"* ]] || { echo "$stderr"; false; }
  run_split bash -c 'tokenize -m tok.json --output-format bin corpus.txt | exec pretrain "$@" -' _ "${R[@]}" \
    --log "$T/pipe.tsv" -m "$T/p"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/mem.tsv" | wc -l)" -eq 9 ]
  for k in made reused mapped pipe; do
    diff <(losses "$T/mem.tsv") <(losses "$T/$k.tsv") || { echo "$k differs"; false; }
  done
  # the same data, so the same fingerprint in every run.yaml
  [ "$(grep -h '^# data' "$T"/{mem,c,s,p}/latest/run.yaml | sort -u | wc -l)" -eq 1 ]
}

@test "a pipe longer than its buffer: windows from the buffer as it is refilled (the losses differ, the run is reproducible)" {
  for k in 1 2; do
    run_split bash -c 'tokenize -m tok.json --output-format bin corpus.txt | exec pretrain "$@" -' _ "${R[@]}" \
      --buffer-tokens 2000 --log "$T/b$k.tsv" -m "$T/b$k"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  done
  [[ "$stderr" == *"'-': 2000 tokens in the shuffle buffer to start with"* ]] || { echo "$stderr"; false; }
  diff <(losses "$T/b1.tsv") <(losses "$T/b2.tsv")
  run_split pretrain "${R[@]}" --log "$T/f.tsv" -m "$T/f" corpus.bin
  ! diff -q <(losses "$T/f.tsv") <(losses "$T/b1.tsv") >/dev/null
}

@test "an endless pipe trains and stops at its step count" {
  run_split bash -c 'yes "The quick brown fox jumps over the lazy dog." | tokenize -m tok.json --output-format bin |
    exec pretrain "$@" -' _ --preset tiny -t 1 --no-progress --max-length 32 -B 4 --steps 20 --buffer-tokens 50000 \
    --tokenizer tok.json -m "$T/e"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"done: step 20"* ]] || { echo "$stderr"; false; }
  # text from an endless pipe too
  run_split bash -c 'yes "The quick brown fox jumps over the lazy dog." | exec pretrain "$@" -' _ --preset tiny -t 1 \
    --no-progress --max-length 32 -B 4 --steps 5 --buffer-tokens 50000 --tokenizer tok.json -m "$T/e2"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "--resume on a pipe says plainly that the pipe is not replayed" {
  run_split bash -c 'tokenize -m tok.json --output-format bin corpus.txt | exec pretrain "$@" -' _ "${R[@]}" -m "$T/r"
  [ "$status" -eq 0 ]
  run_split bash -c 'tokenize -m tok.json --output-format bin corpus.txt | exec pretrain --resume "$1" --steps 10 -' _ "$T/r"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"'-' is a pipe: a resumed run cannot replay it; it trains on what the pipe gives now"* ]] || { echo "$stderr"; false; }
}

@test "the cache: another tokenizer or a changed text makes a new one; --dry-run makes none; a failed run leaves none" {
  run_split pretrain "${R[@]}" --steps 1 -m "$T/c" corpus.txt
  [ "$status" -eq 0 ]
  a="$(ls "$T/c/data" | grep '^corpus')"
  run_split pretrain "${R[@]/tok.json/tok2.json}" --steps 1 -m "$T/c2" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # one cache per text in a run directory: the other tokenizer's replaces it
  rm -rf "$T"/c/step-* "$T/c/latest"
  run_split pretrain "${R[@]/tok.json/tok2.json}" --steps 1 -m "$T/c" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"tokenized into a cache"* ]]
  b="$(ls "$T/c/data" | grep '^corpus')"
  [ "$a" != "$b" ] && [ "$(echo "$b" | wc -l)" -eq 1 ]
  # a changed text
  cp corpus.txt "$T/x.txt"
  run_split pretrain "${R[@]}" --steps 1 -m "$T/x" "$T/x.txt"
  echo "One more line." >>"$T/x.txt"
  rm -rf "$T"/x/step-* "$T/x/latest"
  run_split pretrain "${R[@]}" --steps 1 -m "$T/x" "$T/x.txt"
  [[ "$stderr" == *"tokenized into a cache"* ]] || { echo "$stderr"; false; }
  [ "$(ls "$T/x/data" | grep -c '^x.txt')" -eq 1 ]
  # --dry-run states the cache to make and makes nothing
  run_split pretrain "${R[@]}" --dry-run -m "$T/d" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"data: "*"(text to be tokenized into the cache, then mapped)"* ]] || { echo "$output"; false; }
  [ ! -e "$T/d" ]
  # a run that fails before its first checkpoint takes the run directory it made with it
  run_split pretrain "${R[@]}" --max-length 4096 -m "$T/f" corpus.txt
  [ "$status" -ne 0 ]
  [ ! -e "$T/f" ]
}

@test "a cache that cannot be written (a full disk; here a file size limit) is an error and leaves nothing behind" {
  run_split bash -c 'trap "" XFSZ; ulimit -f 8; exec pretrain "$@" corpus.txt' _ "${R[@]}" -m "$T/full"
  [ "$status" -eq 1 ] || { echo "$status: $stderr"; false; }
  [[ "$stderr" == *"cannot write '$T/full/data/corpus.txt."*"File too large"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/full" ]
}

@test "a truncated stream and a stream replaced by one of another tokenizer are refused" {
  head -c 101 corpus.bin >"$T/trunc.bin"
  run_split pretrain "${R[@]}" -m "$T/t" "$T/trunc.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'$T/trunc.bin': truncated token stream: a partial id at byte 100"* ]] || { echo "$stderr"; false; }
  "$NLPIPE_BIN/tokenize" -m tok2.json --output-format bin -o "$T/other.bin" corpus.txt
  run_split pretrain "${R[@]}" -m "$T/t" "$T/other.bin"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"was made by another tokenizer than 'tok.json'"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/t" ]
}
