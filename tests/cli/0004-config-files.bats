#!/usr/bin/env bats
# YAML config files (-c) under attack (issue 15): keys checked as they are
# read, lists where an option repeats and nowhere else, a size cap, and
# `-o ""` as a usage error.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'low lower newest widest\n%.0s' 1 2 3 4 5 >corpus.txt
  printf 'hug pug bun\n%.0s' 1 2 3 >more.txt
  train-bpe --byte-level --vocab-size 300 --min-frequency 1 -q -o tok.json corpus.txt
}

@test "config: an unknown key is reported at its line, before the rest of the file is parsed" {
  # the second line is a syntax error: the unknown key of line 1 comes first
  printf 'k0: 1\nk1: [1\n' >bad.yaml
  run_split tokenize -m tok.json -c bad.yaml
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'bad.yaml' line 1: unknown key 'k0'"* ]]
}

@test "config: a list where an option repeats is several values (input: [a, b])" {
  printf 'input: [corpus.txt, more.txt]\n' >in.yaml
  run_split tokenize -m tok.json -c in.yaml
  [ "$status" -eq 0 ]
  [ "$output" = "$(cat corpus.txt more.txt | tokenize -m tok.json)" ]
  # a block list, for the trainers too
  printf 'input:\n  - corpus.txt\n  - more.txt\n' >blk.yaml
  train-bpe -q --byte-level --vocab-size 300 --min-frequency 1 -c blk.yaml -o both.json
  train-bpe -q --byte-level --vocab-size 300 --min-frequency 1 corpus.txt more.txt -o args.json
  cmp both.json args.json
  # -i repeats on the command line too, and the flags replace the file's list
  run tokenize -m tok.json -c in.yaml -i more.txt -i more.txt
  [ "$output" = "$(cat more.txt more.txt | tokenize -m tok.json)" ]
  # --dump-config shows the list, and reads back to itself
  run tokenize -m tok.json -c in.yaml --dump-config
  [[ "$output" == *"input: [corpus.txt, more.txt]"* ]]
}

@test "config: a list for a one-value option is an error naming the key's line" {
  printf 'cased: false\nmodel: [a.json, b.json]\n' >m.yaml
  run_split tokenize -c m.yaml
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'m.yaml' line 2: 'model' takes one value, not a list"* ]]
  printf 'vocab-size: [1, 2]\n' >v.yaml
  run_split train-bpe -c v.yaml corpus.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'v.yaml' line 1: 'vocab-size' takes one value, not a list"* ]]
  # comma-separated options take a list, joined
  printf 'special-tokens: ["<s>", "</s>"]\n' >s.yaml
  run train-bpe -c s.yaml --dump-config
  [[ "$output" == *'special-tokens: "<s>,</s>"'* ]]
}

@test "bleu -c: an input list is the systems, as -i takes them" {
  printf 'a b c d\n' >ref.txt
  printf 'a b c d\n' >h1.txt
  printf 'a b x d\n' >h2.txt
  printf 'input: [h1.txt, h2.txt]\n' >b.yaml
  run_split bleu -c b.yaml ref.txt -f text -b
  [ "$status" -eq 0 ]
  [ "$output" = "$(bleu ref.txt -i h1.txt h2.txt -f text -b)" ]
}

@test "config: a file larger than 1 MiB (or an endless stream) is refused, not read to its end" {
  run_split tokenize -m tok.json -c <(head -c 3000000 /dev/zero)
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"larger than 1048576 bytes"* ]]
}

@test "-o '' is a usage error, for every tool that writes a file" {
  run_split tokenize -m tok.json -o '' corpus.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"invalid value for -o: an empty name is not a file name"* ]]
  run_split train-bpe -q -o '' corpus.txt
  [ "$status" -eq 2 ]
  run_split train-wordpiece -q --output= corpus.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"invalid value for --output"* ]]
  printf 'output: ""\n' >o.yaml
  run_split train-bpe -q -c o.yaml corpus.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'o.yaml' line 1: invalid value for 'output': an empty name is not a file name"* ]]
  [ -z "$(ls -A | grep tmp)" ]
}
