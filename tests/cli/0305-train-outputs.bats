#!/usr/bin/env bats
# train-bpe and train-wordpiece under attack (issue 15): a two-file tokenizer
# replaced as one set, temporaries of killed runs removed, options that would
# write a file tokenize refuses, and lines longer than --max-line-bytes.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  for i in $(seq 1 40); do echo "low lower newest widest naïve Straße it's $i"; done >corpus.txt
}

@test "train-bpe --format gpt2/hf: a failure leaves the old pair whole, never new vocabulary with old merges" {
  train-bpe -q --byte-level --vocab-size 280 --min-frequency 1 --format gpt2 -o small corpus.txt
  cp small/encoder.json old-encoder.json
  # the second file cannot be written (here: a directory in its place; on a
  # nearly full disk: no space left): the first must not have been replaced
  rm small/vocab.bpe && mkdir small/vocab.bpe
  run_split train-bpe -q --byte-level --vocab-size 300 --min-frequency 1 --format gpt2 -o small corpus.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"small/vocab.bpe"* ]]
  cmp small/encoder.json old-encoder.json
  [ -z "$(ls small | grep tmp)" ]
  # the same for HF's pair
  train-bpe -q --vocab-size 60 --min-frequency 1 --format hf -o hf corpus.txt
  cp hf/vocab.json old-vocab.json
  rm hf/merges.txt && mkdir hf/merges.txt
  run_split train-bpe -q --vocab-size 70 --min-frequency 1 --format hf -o hf corpus.txt
  [ "$status" -eq 1 ]
  cmp hf/vocab.json old-vocab.json
}

@test "a write removes the temporaries a killed run (SIGKILL) left beside its target, not a live one's" {
  train-bpe -q --byte-level --vocab-size 280 --min-frequency 1 -o tok.json corpus.txt
  ( exit 0 ) & gone=$!
  wait "$gone"
  printf 'half a file' >"tok.json.tmp.$gone-0"
  printf 'half a file' >"tok.json.tmp.$gone-13"
  printf 'being written' >"tok.json.tmp.$$-0"
  train-bpe -q --byte-level --vocab-size 290 --min-frequency 1 -o tok.json corpus.txt
  [ ! -e "tok.json.tmp.$gone-0" ]
  [ ! -e "tok.json.tmp.$gone-13" ]
  [ -e "tok.json.tmp.$$-0" ]
  tokenize -m tok.json <<<"lower" >/dev/null
}

@test "train-bpe --unk-token '' is a usage error (tokenize would refuse the file)" {
  run_split train-bpe --unk-token '' --vocab-size 100 --min-frequency 1 -o u.json corpus.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--unk-token must not be empty"* ]]
  [ ! -e u.json ]
}

@test "train-bpe, train-wordpiece: a line longer than --max-line-bytes is an error naming the file and line" {
  { head -3 corpus.txt; head -c 5000 /dev/zero | tr '\0' 'x'; echo; } >long.txt
  run_split train-bpe -q --max-line-bytes 1000 long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'long.txt' line 4: longer than 1000 bytes, the longest line allowed (--max-line-bytes raises the limit)"* ]]
  run_split train-wordpiece -q --max-line-bytes 1000 <long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 4: longer than 1000 bytes"* ]]
  run train-bpe -q --max-line-bytes 5000 --vocab-size 300 --min-frequency 1 long.txt
  [ "$status" -eq 0 ]
  # endless input without a newline: stops at the default 16 MiB
  run_split train-bpe -q </dev/zero
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: longer than 16777216 bytes"* ]]
}

@test "train-bpe -i repeats: every -i file is read" {
  printf 'hug pug\n' >a.txt
  printf 'zebra\n' >b.txt
  train-bpe -q --vocab-size 100 --min-frequency 1 -i a.txt -i b.txt -o ab.json
  grep -q '"z"' ab.json
  grep -q '"h"' ab.json
}
