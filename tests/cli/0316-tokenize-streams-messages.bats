#!/usr/bin/env bats
# tokenize's token streams and messages under attack (issue 15): a header
# that contradicts itself, ids too large for an int, the place of a bad id
# on standard input, --pair with three fields, and input quoted in messages
# without raw bytes.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'low lower newest widest\n%.0s' 1 2 3 4 5 >corpus.txt
  train-bpe --byte-level --vocab-size 300 --min-frequency 1 -q -o tok.json corpus.txt
  V=$(/usr/bin/python3 -c 'import json; t = json.load(open("tok.json")); print(len(t["model"]["vocab"]))')
}

# an nlpipe token stream header: vocabulary size $1, end-of-text id $2, then ids
stream() {
  /usr/bin/python3 -c 'import struct, sys
a = [int(x) for x in sys.argv[1:]]
sys.stdout.buffer.write(struct.pack("<4sIIII12x", b"NLTK", 1, 4, a[0], a[1]) + struct.pack("<%dI" % len(a[2:]), *a[2:]))' "$@"
}

@test "tokenize -d: a token-stream header whose end-of-text id is past its vocabulary is refused" {
  stream "$V" "$V" 5 7 >bad.bin
  run_split tokenize -m tok.json -d bad.bin
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'bad.bin' byte 16: end-of-text id $V is not below the vocabulary size $V of the header"* ]]
  stream "$V" $((V - 1)) 5 7 >ok.bin
  run tokenize -m tok.json -d ok.bin
  [ "$status" -eq 0 ]
}

@test "tokenize -d: an llm.c shard id 0xFFFFFFFF is reported as such, at its byte, also on standard input" {
  /usr/bin/python3 -c 'import struct, sys
sys.stdout.buffer.write(struct.pack("<256i", 20240801, 7, 3, *([0] * 253)) + struct.pack("<3I", 5, 0xFFFFFFFF, 7))' >ll.bin
  run_split tokenize -m tok.json -d <ll.bin
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'<stdin>' byte 1028: id 4294967295 is not below the vocabulary size $V of 'tok.json'"* ]]
  /usr/bin/python3 -c 'import struct, sys
sys.stdout.buffer.write(struct.pack("<256i", 20240801, 7, 3, *([0] * 253)) + struct.pack("<3I", 5, 7000, 7))' >l2.bin
  run_split tokenize -m tok.json -d <l2.bin
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'<stdin>' byte 1028: id 7000 is not below the vocabulary size $V of 'tok.json'"* ]]
}

@test "tokenize --pair: three tab-separated fields are an error naming the line, not joined" {
  run_split tokenize -m tok.json --pair <<<$'low\tlower\nlow\tlower\tnewest\n'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 2: --pair needs two segments separated by one tab, found 3 fields"* ]]
  [ "$output" = "$(printf 'low\tlower\n' | tokenize -m tok.json --pair)" ]
}

@test "tokenize -d: input quoted in a message has no raw control or invalid bytes" {
  printf 'low \xff\x1b[31mX\n' >p.txt
  run_split tokenize -m tok.json -d --input-format piece p.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'p.txt' line 1: '\\xff\\x1b[31mX' is not a token of 'tok.json'"* ]]
  [[ "$stderr" != *$'\x1b'* ]]
  printf '12 3\x07x\n' >i.txt
  run_split tokenize -m tok.json -d --input-format id i.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'3\\x07x' is not a token id"* ]]
}
