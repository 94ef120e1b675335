#!/usr/bin/env bats
# tokenize -m with files that are not tokenizers, or broken ones: a message
# naming the file and exit 3, never a crash (each case once crashed or could).

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'low lower newest widest\n%.0s' 1 2 3 4 5 > corpus.txt
  train-bpe --byte-level --vocab-size 300 --min-frequency 1 -q -o tok.json corpus.txt
  echo "lower newest" > text.txt
}

@test "tokenize: a binary file as the model (invalid UTF-8 in a codes file)" {
  # bytes that are neither JSON nor valid UTF-8: read as subword-nmt codes,
  # whose reader used to free its buffer twice on the UTF-8 error
  printf '\x7fELF\x02\x01\x01\x00\xff\xfe\x80 abc\n' >bin.dat
  run_split tokenize -m bin.dat <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'bin.dat' byte 8: invalid UTF-8"* ]]
  [ -z "$output" ]
}

@test "tokenize: truncated and emptied tokenizer.json" {
  head -c 400 tok.json >trunc.json
  run_split tokenize -m trunc.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'trunc.json' line "* ]]
  : >empty.json
  run_split tokenize -m empty.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"empty.json"* ]]
}

@test "tokenize: a tokenizer.json whose merges name unknown tokens" {
  echo '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' >bad.json
  run_split tokenize -m bad.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'bad.json': model.merges[0]: token 'b' is not in the vocabulary"* ]]
}

@test "tokenize: a directory without tokenizer files, a missing model" {
  mkdir nothing
  run_split tokenize -m nothing <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"nothing"* ]]
  run_split tokenize -m missing.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"cannot open 'missing.json'"* ]]
}

@test "tokenize: a tokenizer.json from a pipe is read once; other formats from a pipe are refused clearly" {
  run_split tokenize -m <(cat tok.json) <text.txt
  [ "$status" -eq 0 ]
  [ "$output" = "$(tokenize -m tok.json <text.txt)" ]
  printf '[PAD]\n[UNK]\nlow\n' >vocab.txt
  run_split tokenize -m <(cat vocab.txt) <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"is not a regular file: from a pipe only a tokenizer.json can be read"* ]]
}

@test "tokenize -m: a file that is no tokenizer says which formats were tried; a token stream or a model is named" {
  printf 'This is a README.\nNothing to see.\n' >README.txt
  run_split tokenize -m README.txt <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == "tokenize: 'README.txt' is not a tokenizer: tried tokenizer.json and JSON vocabularies"*"a merges file"*"a BERT vocab.txt"*"then subword-nmt codes: 'README.txt' line 1: expected two tokens separated by one space" ]]
  printf 'NLTK\1\0\0\0\2\0\0\0\100\0\0\0\377\377\377\377\0\0\0\0\0\0\0\0\0\0\0\0\3\0' >ids.bin
  run_split tokenize -m ids.bin <text.txt
  [ "$status" -eq 3 ]
  [ "$stderr" = "tokenize: 'ids.bin' is a token stream (what tokenize --output-format bin writes, or an llm.c shard), not a tokenizer" ]
  printf '\20\0\0\0\0\0\0\0{"a":{"dtype": "F32"}}' >m.safetensors
  run_split tokenize -m m.safetensors <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'m.safetensors' is a safetensors file (a model?), not a tokenizer" ]]
}
