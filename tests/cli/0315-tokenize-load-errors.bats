#!/usr/bin/env bats
# tokenize -m with files that are no (usable) tokenizer (issue 15): refused
# when loaded, exit 3, with a message that says what the file is not and
# where; never taken for a vocab.txt to fail at the first word with 1.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'low lower newest widest\n%.0s' 1 2 3 4 5 >corpus.txt
  train-bpe --byte-level --vocab-size 300 --min-frequency 1 -q -o tok.json corpus.txt
  echo "lower newest" >text.txt
}

@test "tokenize: a template naming an id past the vocabulary is refused at load (was: encoded, failed in bin and -d)" {
  /usr/bin/python3 -c 'import json; t = json.load(open("tok.json"))
t["added_tokens"] = [{"id": 300, "content": "<s>", "special": True}]
t["post_processor"] = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
    {"Sequence": {"id": "A", "type_id": 0}}], "pair": [],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [99999999], "tokens": ["<s>"]}}}
json.dump(t, open("post.json", "w"))'
  run_split tokenize -m post.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'post.json': post_processor: special token '<s>' has id 99999999, which is not in the vocabulary (size 301)"* ]]
  [ -z "$output" ]
}

@test "tokenize: JSON that is no tokenizer is refused at load with what it is (null, [], 1e999999, deep arrays)" {
  for j in null '[]' 1e999999 '"x"' 42; do
    echo "$j" >j.json
    run_split tokenize -m j.json <text.txt
    [ "$status" -eq 3 ] || { echo "$j: status $status: $stderr"; false; }
    [[ "$stderr" == *"'j.json'"* ]]
  done
  echo null >j.json
  run_split tokenize -m j.json <text.txt
  [[ "$stderr" == *"'j.json': null, not a tokenizer: expected a JSON object (tokenizer.json)"* ]]
  /usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)' >deep.json
  run_split tokenize -m deep.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'deep.json' line 1 column "*": maximum parsing depth reached"* ]]
}

@test "tokenize: a WordPiece tokenizer that cannot encode every word is refused at load (vocab {}, no unk_token)" {
  echo '{"model": {"type": "WordPiece", "vocab": {}}}' >empty.json
  run_split tokenize -m empty.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'empty.json': model.vocab is empty"* ]]
  echo '{"model": {"type": "WordPiece", "unk_token": "[X]", "vocab": {"a": 0, "##b": 1}}}' >nounk.json
  run_split tokenize -m nounk.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'nounk.json': unk_token '[X]' is not in the vocabulary"* ]]
  # a text file read as a BERT vocab.txt says so
  printf 'null\n' >j.txt
  run_split tokenize -m j.txt <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'j.txt' (read as a BERT vocab.txt): unk_token '[UNK]' is not in the vocabulary"* ]]
}

@test "tokenize: a vocab.txt with CR-only line ends is refused at load, naming the line" {
  printf '[PAD]\r[UNK]\rlow\r' >cr.txt
  run_split tokenize -m cr.txt <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'cr.txt' line 1: a carriage return inside a line"* ]]
  # CR LF is fine
  printf '[PAD]\r\n[UNK]\r\nlow\r\n' >crlf.txt
  run tokenize -m crlf.txt <text.txt
  [ "$status" -eq 0 ]
}

@test "tokenize: a tokenizer.json starting with a byte-order mark is read as JSON, as HF does" {
  { printf '\xef\xbb\xbf'; cat tok.json; } >bom.json
  run tokenize -m bom.json <text.txt
  [ "$status" -eq 0 ]
  [ "$output" = "$(tokenize -m tok.json <text.txt)" ]
  { printf '\xef\xbb\xbf'; cat tok.json; } >bom.txt
  run tokenize -m bom.txt <text.txt
  [ "$status" -eq 0 ]
  [ "$output" = "$(tokenize -m tok.json <text.txt)" ]
}

@test "tokenize: an empty file is no tokenizer (was: 'no merges')" {
  : >empty.txt
  run_split tokenize -m empty.txt <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'empty.txt' is empty: not a tokenizer file"* ]]
}

@test "tokenize: a vocab.txt whose line 301 is odd is read as a vocab.txt, and errors name that line" {
  { echo '[PAD]'; echo '[UNK]'; for i in $(seq 3 300); do echo "w$i"; done; echo 'a b'; echo low; } >v.txt
  run tokenize -m v.txt <text.txt
  [ "$status" -eq 0 ]
  [ "$output" = "1 1" ]
  { echo '[PAD]'; echo '[UNK]'; for i in $(seq 3 300); do echo "w$i"; done; printf 'bad\xff\n'; } >u.txt
  run_split tokenize -m u.txt <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'u.txt' byte 1401: invalid UTF-8 (line 301)"* ]]
}

@test "tokenize: an added token with empty content is reported as empty, not missing" {
  /usr/bin/python3 -c 'import json; t = json.load(open("tok.json"))
t["added_tokens"] = [{"id": 300, "content": ""}]
json.dump(t, open("e.json", "w"))'
  run_split tokenize -m e.json <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'e.json': added_tokens[0]: 'content' is empty"* ]]
}

@test "tokenize: a tokenizer file past 256 MiB (an endless stream) is refused, not read to its end" {
  run_split tokenize -m <(head -c 300000000 /dev/zero) <text.txt
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"larger than 268435456 bytes"* ]]
}
