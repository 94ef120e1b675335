#!/usr/bin/env bats
# tokenize -d: ids, pieces and token streams (ours and llm.c's) back to text;
# bad tokenizer files and bad token input.

load helper

T="$NLPIPE_TOP/tests/data/tok/hug-template.json"

# GPT-2: the full vocabulary in ../shared, else the compact copy in tests/data/golden
gpt2() { ref_path vectors/tokenize/gpt2; }

@test "tokenize -d turns ids back into the exact bytes (byte-level)" {
  printf 'Hello, world!\n  two  spaces \t\n\ncaf\xc3\xa9 \xf0\x9f\xa4\x97\n' >"$BATS_TEST_TMPDIR/in.txt"
  tokenize -m "$(gpt2)" "$BATS_TEST_TMPDIR/in.txt" | tokenize -m "$(gpt2)" -d >"$BATS_TEST_TMPDIR/back.txt"
  cmp "$BATS_TEST_TMPDIR/in.txt" "$BATS_TEST_TMPDIR/back.txt"
  run tokenize -m "$(gpt2)" --decode <<<"15496 995"
  [ "$output" = "Hello world" ]
}

@test "tokenize -d --input-format piece reads tokens" {
  run tokenize -m "$(gpt2)" -d --input-format piece <<<"Hello Ġworld !"
  [ "$output" = "Hello world!" ]
  run_split tokenize -m "$(gpt2)" -d --input-format piece <<<"Hello nosuchtoken_xyz"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: 'nosuchtoken_xyz' is not a token of"* ]]
}

@test "tokenize -d --input-format id refuses ids out of range and non-numbers (exit 1)" {
  run_split tokenize -m "$(gpt2)" -d --input-format id <<<$'15496\n15496 50257'
  [ "$status" -eq 1 ]
  [ "$output" = "Hello" ]
  [[ "$stderr" == *"'<stdin>' line 2: id 50257 is out of range (vocabulary size 50257)"* ]]
  run_split tokenize -m "$(gpt2)" -d <<<"12 -3"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: '-3' is not a token id"* ]]
  run_split tokenize -m "$(gpt2)" -d <<<"99999999999"
  [ "$status" -eq 1 ]
}

@test "tokenize -d --no-special-tokens drops [CLS], [SEP] and padding; decoder BPE joins words" {
  run tokenize -m "$T" -d <<<"2 17 21 11 3 0"
  [ "$output" = "[CLS]hug bug [SEP][PAD]" ]
  run tokenize -m "$T" -d --no-special-tokens <<<"2 17 21 11 3 0"
  [ "$output" = "hug bug" ]
}

@test "tokenize bin round trip: --input-format auto and bin, from a pipe" {
  printf 'first document\n\nthird <|endoftext|> one\n' >"$BATS_TEST_TMPDIR/in.txt"
  tokenize -m "$(gpt2)" --output-format bin "$BATS_TEST_TMPDIR/in.txt" | tokenize -m "$(gpt2)" -d >"$BATS_TEST_TMPDIR/auto.txt"
  [ "$(cat "$BATS_TEST_TMPDIR/auto.txt")" = $'first document\n\nthird \n one' ]
  tokenize -m "$(gpt2)" --special-tokens split --output-format bin "$BATS_TEST_TMPDIR/in.txt" |
    tokenize -m "$(gpt2)" -d --input-format bin >"$BATS_TEST_TMPDIR/bin.txt"
  cmp "$BATS_TEST_TMPDIR/in.txt" "$BATS_TEST_TMPDIR/bin.txt"
}

@test "tokenize -d --input-format auto looks at each input: ids, then a token stream" {
  tokenize -m "$T" --no-special-tokens -o "$BATS_TEST_TMPDIR/a.ids" <<<"hug"
  tokenize -m "$T" --no-special-tokens --output-format bin -o "$BATS_TEST_TMPDIR/b.bin" <<<"pug"
  run_split tokenize -m "$T" -d "$BATS_TEST_TMPDIR/a.ids" "$BATS_TEST_TMPDIR/b.bin"
  [ "$status" -eq 0 ]
  [ "$output" = $'hug\npug' ]
  run_split tokenize -m "$T" -d "$BATS_TEST_TMPDIR/b.bin" "$BATS_TEST_TMPDIR/a.ids"
  [ "$status" -eq 0 ]
  [ "$output" = $'pug\nhug' ]
}

@test "tokenize -d reads llm.c token shards (header of 256 int32, uint16 tokens, EOT before each document)" {
  python3 - "$BATS_TEST_TMPDIR/shard.bin" <<'EOF'
import struct, sys
toks = [50256, 15496, 995, 50256, 31373]
hdr = [20240520, 1, len(toks)] + [0] * 253
open(sys.argv[1], 'wb').write(struct.pack('<256i', *hdr) + struct.pack('<%dH' % len(toks), *toks))
EOF
  run_split tokenize -m "$(gpt2)" -d "$BATS_TEST_TMPDIR/shard.bin"
  [ "$status" -eq 0 ]
  [ "$output" = $'Hello world\nhello' ]
  head -c 1030 "$BATS_TEST_TMPDIR/shard.bin" >"$BATS_TEST_TMPDIR/short.bin"
  run_split tokenize -m "$(gpt2)" -d --input-format bin "$BATS_TEST_TMPDIR/short.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"truncated llm.c shard"* ]]
}

@test "tokenize -d: token streams that do not fit the tokenizer are format errors (exit 3)" {
  tokenize -m "$T" --output-format bin --no-special-tokens --eot '[SEP]' -o "$BATS_TEST_TMPDIR/small.bin" <<<"hug pug hug"
  run_split tokenize -m "$(gpt2)" -d "$BATS_TEST_TMPDIR/small.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"was written with a vocabulary of 23 tokens"* ]]
  printf 'NLTK\2\0\0\0' >"$BATS_TEST_TMPDIR/v2.bin"
  run_split tokenize -m "$T" -d --input-format bin "$BATS_TEST_TMPDIR/v2.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"truncated token stream header"* ]]
  head -c 35 "$BATS_TEST_TMPDIR/small.bin" >"$BATS_TEST_TMPDIR/cut.bin"
  run_split tokenize -m "$T" -d "$BATS_TEST_TMPDIR/cut.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"a partial id at byte 34"* ]]
  run_split tokenize -m "$T" -d --input-format bin <<<"2 17 3"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"not a token stream"* ]]
}

@test "tokenize -d -z: NUL-separated records" {
  run bash -c "printf '64 198 65\0' | tokenize -m '$(gpt2)' -d -z | od -c | head -1"
  [[ "$output" == *"a  \\n   b  \\0"* ]]
}

@test "tokenize: missing, malformed or unsupported tokenizer files exit 3 and say where" {
  run_split tokenize -m "$BATS_TEST_TMPDIR/none.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "tokenize: cannot open '$BATS_TEST_TMPDIR/none.json'"* ]]
  printf '{"model": {\n "type": "BPE",\n "vocab": {"a": 0,}\n}}' >"$BATS_TEST_TMPDIR/bad.json"
  run_split tokenize -m "$BATS_TEST_TMPDIR/bad.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"bad.json' line 3 column"* ]]
  printf '{"model": {"type": "WordLevel", "vocab": {}}}' >"$BATS_TEST_TMPDIR/ug.json"
  run_split tokenize -m "$BATS_TEST_TMPDIR/ug.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"ug.json': model: model type 'WordLevel' is not supported"* ]]
  printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b"]]}}' >"$BATS_TEST_TMPDIR/m.json"
  run_split tokenize -m "$BATS_TEST_TMPDIR/m.json" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"model.merges[0]: token 'b' is not in the vocabulary"* ]]
  mkdir -p "$BATS_TEST_TMPDIR/emptydir"
  run_split tokenize -m "$BATS_TEST_TMPDIR/emptydir" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"no tokenizer in this directory"* ]]
  printf 'just some text\n' >"$BATS_TEST_TMPDIR/codes"
  run_split tokenize -m "$BATS_TEST_TMPDIR/codes" <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"codes' line 1: expected two tokens separated by one space"* ]]
}

@test "tokenize: no -m is a usage error" {
  run_split tokenize <<<"x"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"tokenize: no tokenizer: give one with -m"* ]]
}

@test "tokenize -d: pieces are recognised as ids and token streams are; an id input with a piece names --input-format piece" {
  run_split bash -c 'echo "hello world" | tokenize -m "$1" --output-format piece | tokenize -m "$1" -d' _ "$(gpt2)"
  [ "$status" -eq 0 ]
  [ "$output" = "hello world" ]
  run_split tokenize -m "$T" -d <<<$'\nhug</w> bun</w>'
  [ "$status" -eq 0 ]
  [ "$output" = $'\nhug bun' ]
  run_split tokenize -m "$(gpt2)" -d --input-format id <<<"15496 hello"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: 'hello' is not a token id (pieces are read with --input-format piece)"* ]]
}

@test "tokenize: a last line without newline survives a token stream byte for byte; text output ends every line (the line-mode rule)" {
  printf 'first line\nno newline' >"$BATS_TEST_TMPDIR/in.txt"
  tokenize -m "$(gpt2)" --output-format bin -o "$BATS_TEST_TMPDIR/s.bin" "$BATS_TEST_TMPDIR/in.txt"
  tokenize -m "$(gpt2)" -d "$BATS_TEST_TMPDIR/s.bin" >"$BATS_TEST_TMPDIR/back.txt"
  cmp "$BATS_TEST_TMPDIR/in.txt" "$BATS_TEST_TMPDIR/back.txt"
  [ "$(tail -c 2 "$BATS_TEST_TMPDIR/s.bin" | od -An -tx1 | tr -d ' ')" = ffff ]
  # through pipes, and with NUL-terminated records
  run bash -c 'printf "no newline" | tokenize -m "$1" --output-format bin | tokenize -m "$1" -d | od -An -c' _ "$(gpt2)"
  [ "$output" = "$(printf 'no newline' | od -An -c)" ]
  run bash -c 'printf "a\0b" | tokenize -z -m "$1" --output-format bin | tokenize -z -m "$1" -d | od -An -c' _ "$(gpt2)"
  [ "$output" = "$(printf 'a\0b' | od -An -c)" ]
  # a terminated text has no marker; text formats end every line (man page: line mode)
  printf 'x\n' | tokenize -m "$(gpt2)" --output-format bin | tokenize -m "$(gpt2)" -d | cmp - <(printf 'x\n')
  [ "$(printf 'no newline' | tokenize -m "$(gpt2)" | tokenize -m "$(gpt2)" -d | od -An -c | tr -s ' ')" = " n o n e w l i n e \n" ]
  sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$NLPIPE_TOP/man/man1/tokenize.1" | grep -q '^Line mode: '
}
