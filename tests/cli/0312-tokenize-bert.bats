#!/usr/bin/env bats
# tokenize with BERT (WordPiece): vocab.txt, --cased, the template, pairs,
# truncation, padding, decoding, and malformed vocabularies.

load helper

vocab() { echo "$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt"; }

@test "tokenize -m vocab.txt: [CLS] A [SEP] by default, --no-special-tokens without" {
  need_shared
  run tokenize -m "$(vocab)" <<<"Hello, world!"
  [ "$output" = "101 7592 1010 2088 999 102" ]
  run tokenize -m "$(vocab)" --no-special-tokens --output-format piece <<<"Unaffable tokenization"
  [ "$output" = "una ##ffa ##ble token ##ization" ]
  # special tokens in the text are matched whole, before lowercasing
  run tokenize -m "$(vocab)" --output-format piece <<<"a [MASK] b [mask]"
  [ "$output" = "[CLS] a [MASK] b [ mask ] [SEP]" ]
  run tokenize -m "$(vocab)" --special-tokens split --no-special-tokens --output-format piece <<<"[MASK]"
  [ "$output" = "[ mask ]" ]
}

@test "tokenize -m vocab.txt --pair: [CLS] A [SEP] B [SEP], type ids, attention mask" {
  need_shared
  run tokenize -m "$(vocab)" --pair --type-ids --attention-mask <<<$'Hello world\tHow are you?'
  [ "$output" = $'101 7592 2088 102 2129 2024 2017 1029 102\t0 0 0 0 1 1 1 1 1\t1 1 1 1 1 1 1 1 1' ]
  run_split tokenize -m "$(vocab)" --pair <<<"no tab here"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: --pair needs two segments separated by a tab"* ]]
}

@test "tokenize -m vocab.txt: longest-first truncation and padding with [PAD]" {
  need_shared
  # 7 + 2 word pieces, budget 8 - 3 = 5: the longer loses tokens first
  run tokenize -m "$(vocab)" --pair --max-length 8 --output-format piece --type-ids <<<$'one two three four five six seven\tA b'
  [ "$output" = $'[CLS] one two three [SEP] a b [SEP]\t0 0 0 0 0 1 1 1' ]
  run tokenize -m "$(vocab)" --max-length 6 --padding max --attention-mask <<<$'Hi\nHello there you'
  [ "${lines[0]}" = $'101 7632 102 0 0 0\t1 1 1 0 0 0' ]
  [ "${lines[1]}" = $'101 7592 2045 2017 102 0\t1 1 1 1 1 0' ]
  run tokenize -m "$(vocab)" --padding longest --output-format piece <<<$'Hi\nHello there'
  [ "${lines[0]}" = "[CLS] hi [SEP] [PAD]" ]
  run tokenize -m "$(vocab)" --pair --max-length 8 --truncation only-second --output-format piece <<<$'a b c\td e f g h'
  [ "$output" = "[CLS] a b c [SEP] d e [SEP]" ]
  run_split tokenize -m "$(vocab)" --pair --max-length 2
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"smaller than the 3 special tokens"* ]]
}

@test "tokenize -m vocab.txt: BertNormalizer traps (accents, controls, CJK, 100 characters)" {
  need_shared
  run tokenize -m "$(vocab)" --no-special-tokens --output-format piece <<<$'Caf\xc3\xa9 na\xc3\xafve x\x0by soft\xc2\xadhyphen \xe4\xb8\xad\xe6\x96\x87'
  [ "$output" = $'cafe naive x ##y soft ##hy ##ph ##en \xe4\xb8\xad \xe6\x96\x87' ]
  long="$(printf 'a%.0s' {1..100})"
  run tokenize -m "$(vocab)" --no-special-tokens --output-format piece <<<"$long ${long}a"
  [[ "$output" == "aaa"*" [UNK]" ]]
}

@test "tokenize --cased: a vocab.txt keeps case and accents; other files refuse it" {
  need_shared
  run tokenize -m "$(vocab)" --cased --no-special-tokens --output-format piece <<<$'Hello caf\xc3\xa9'
  [ "$output" = "[UNK] [UNK]" ]
  run tokenize -m "$(vocab)" --cased --no-special-tokens --output-format piece <<<"hello cafe"
  [ "$output" = "hello cafe" ]
  run_split tokenize -m "$SHARED/vectors/tokenize/gpt2" --cased <<<"x"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--cased is for a bare BERT vocab.txt"* ]]
}

@test "tokenize -m: a directory holding vocab.txt, and a vocab file of another name" {
  need_shared
  mkdir "$BATS_TEST_TMPDIR/bert"
  cp "$(vocab)" "$BATS_TEST_TMPDIR/bert/vocab.txt"
  run tokenize -m "$BATS_TEST_TMPDIR/bert" <<<"hello"
  [ "$output" = "101 7592 102" ]
  cp "$(vocab)" "$BATS_TEST_TMPDIR/tokens.lst"
  run tokenize -m "$BATS_TEST_TMPDIR/tokens.lst" <<<"hello"
  [ "$output" = "101 7592 102" ]
}

@test "tokenize -d with WordPiece: ## joined, HF's cleanup, special tokens dropped on request" {
  need_shared
  # HF's cleanup works token by token: "n ' t" stays as it is (HF decodes the same)
  run tokenize -m "$(vocab)" -d <<<"101 14477 20961 3468 1010 2009 2003 1050 1005 1056 999 102"
  [ "$output" = "[CLS] unaffable, it is n ' t! [SEP]" ]
  run tokenize -m "$(vocab)" -d --no-special-tokens <<<"101 7592 1010 2088 999 102"
  [ "$output" = "hello, world!" ]
  run tokenize -m "$(vocab)" -d --input-format piece <<<"una ##ffa ##ble ."
  [ "$output" = "unaffable." ]
  run_split tokenize -m "$(vocab)" -d <<<"30522"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"id 30522 is out of range (vocabulary size 30522)"* ]]
}

@test "tokenize: malformed vocab.txt files are format errors (exit 3) naming file and line" {
  d="$BATS_TEST_TMPDIR"
  : >"$d/vocab.txt"
  run_split tokenize -m "$d/vocab.txt" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'$d/vocab.txt' is empty"* ]]
  printf '[UNK]\na\n\nb\n' >"$d/vocab.txt"
  run_split tokenize -m "$d/vocab.txt" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"vocab.txt' line 3: empty line"* ]]
  printf '[UNK]\na\nb\na\n' >"$d/vocab.txt"
  run_split tokenize -m "$d/vocab.txt" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"vocab.txt' line 4: token 'a' has two ids (1 and 3)"* ]]
  printf '[UNK]\n\xff\n' >"$d/vocab.txt"
  run_split tokenize -m "$d/vocab.txt" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"vocab.txt' byte 6: invalid UTF-8"* ]]
  printf '[UNK]\na\0b\n' >"$d/vocab.txt"
  run_split tokenize -m "$d/vocab.txt" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"line 2: a NUL byte"* ]]
  chmod 000 "$d/vocab.txt"
  if [ "$(id -u)" != 0 ]; then
    run_split tokenize -m "$d/vocab.txt" <<<"x"
    [ "$status" -eq 3 ]
    [[ "$stderr" == *"cannot open '$d/vocab.txt'"* ]]
  fi
}

@test "tokenize: malformed WordPiece tokenizer.json files name the JSON path" {
  d="$BATS_TEST_TMPDIR"
  printf '{"model": {"type": "WordPiece", "vocab": [1]}}' >"$d/t.json"
  run_split tokenize -m "$d/t.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"model.vocab: expected an object"* ]]
  printf '{"model": {"type": "WordPiece", "max_input_chars_per_word": -1, "vocab": {}}}' >"$d/t.json"
  run_split tokenize -m "$d/t.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'max_input_chars_per_word' must be an integer"* ]]
  printf '{"model": {"type": "WordPiece", "vocab": {"a": 0}}, "normalizer": {"type": "BertNormalizer", "lowercase": 1}}' >"$d/t.json"
  run_split tokenize -m "$d/t.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"normalizer: 'lowercase' must be true or false"* ]]
  printf '{"model": {"type": "WordLevel", "vocab": {}}}' >"$d/t.json"
  run_split tokenize -m "$d/t.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"model type 'WordLevel' is not supported (BPE, WordPiece and Unigram are)"* ]]
}
