#!/usr/bin/env bats
# tokenize: encoding options — model formats, output formats, special tokens,
# pairs, truncation, padding, type ids and attention mask, threads, batches.

load helper

T="$NLPIPE_TOP/tests/data/tok/hug-template.json"   # classic BPE, </w>, [CLS] $A [SEP] $B [SEP]

# GPT-2: the full vocabulary in ../shared, else the compact copy in tests/data/golden
gpt2() { ref_path vectors/tokenize/gpt2; }

@test "tokenize -m gpt2 dir: ids of the reference rows, one line per line" {
  run_split tokenize -m "$(gpt2)" <<<$'Hello world\nHello, world!\n\nhello'
  [ "$status" -eq 0 ]
  [ "$output" = $'15496 995\n15496 11 995 0\n\n31373' ]
  [ -z "$stderr" ]
}

@test "tokenize -m accepts encoder.json, vocab.bpe, a tokenizer.json and HF vocab.json + merges.txt" {
  run tokenize -m "$(gpt2)/encoder.json" <<<"Hello world"
  [ "$output" = "15496 995" ]
  run tokenize -m "$(gpt2)/vocab.bpe" <<<"Hello world"
  [ "$output" = "15496 995" ]
  d="$BATS_TEST_TMPDIR/hf"; mkdir -p "$d"
  cp "$(gpt2)/encoder.json" "$d/vocab.json"; cp "$(gpt2)/vocab.bpe" "$d/merges.txt"
  run tokenize -m "$d" <<<"Hello world"
  [ "$output" = "15496 995" ]
  run tokenize -m "$T" <<<"hug"
  [ "$output" = "2 17 3" ]
}

@test "tokenize --output-format piece prints the vocabulary's spelling" {
  run tokenize -m "$(gpt2)" --output-format piece <<<"Hello world"
  [ "$output" = "Hello Ġworld" ]
  run tokenize -m "$T" --output-format piece <<<"hug bug"
  [ "$output" = "[CLS] hug</w> bu g</w> [SEP]" ]
}

@test "tokenize --output-format id is the default; bad formats are usage errors" {
  run tokenize -m "$T" --output-format id <<<"hug"
  [ "$output" = "2 17 3" ]
  run_split tokenize -m "$T" --output-format xml <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'xml' is not one of piece, id, bin or subword-nmt"* ]]
}

@test "tokenize --output-format bin writes the documented header and one EOT between documents" {
  tokenize -m "$(gpt2)" --output-format bin -o "$BATS_TEST_TMPDIR/t.bin" <<<$'Hello world\nhello'
  run od -A n -t x1 -v "$BATS_TEST_TMPDIR/t.bin"
  # bytes 20-27: the tokenizer's fingerprint, FNV-1a over the vocabulary size (8 bytes, little-endian)
  # and each id's token then 0xFF, computed here from encoder.json
  fp="$(python3 - "$(gpt2)/encoder.json" <<'PY'
import json, struct, sys
enc = json.load(open(sys.argv[1], encoding='utf-8'))
tok = {v: k for k, v in enc.items()}
V = max(tok) + 1
h = 1469598103934665603
def mix(b):
    global h
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
mix(struct.pack('<Q', V))
for i in range(V):
    mix(tok[i].encode('utf-8') if i in tok else b'\xfe')
    mix(b'\xff')
print(' '.join('%02x' % c for c in struct.pack('<Q', h or 1)))
PY
)"
  [ "$(echo $output)" = "4e 4c 54 4b 01 00 00 00 02 00 00 00 51 c4 00 00 50 c4 00 00 $fp 00 00 00 00 88 3c e3 03 50 c4 8d 7a" ] ||
    { echo "$output / $fp"; false; }
}

@test "tokenize --eot names the separator token; unknown ones are usage errors" {
  run tokenize -m "$T" --output-format bin --no-special-tokens --eot '[SEP]' -o "$BATS_TEST_TMPDIR/t.bin" <<<$'hug\npug'
  [ "$status" -eq 0 ]
  run od -A n -t u2 -j 16 -N 2 "$BATS_TEST_TMPDIR/t.bin"
  [ "$(echo $output)" = "3" ]
  run_split tokenize -m "$T" --output-format bin --eot '<nope>' -o "$BATS_TEST_TMPDIR/t.bin" <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--eot: '<nope>' is not a token"* ]]
  # a token the template adds to every record cannot separate documents
  run_split tokenize -m "$T" --output-format bin --eot '[SEP]' -o "$BATS_TEST_TMPDIR/t.bin" <<<$'hug\npug'
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--eot: '[SEP]' is added to every record by the template"* ]]
  # and the default never picks one: here no other end-of-text token is known
  run_split tokenize -m "$T" --output-format bin -o "$BATS_TEST_TMPDIR/t.bin" <<<$'hug\npug'
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"adds [SEP] to every record through its template, so it cannot separate documents"* ]]
}

@test "tokenize --output-format bin needs an end-of-text token" {
  printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}' >"$BATS_TEST_TMPDIR/t.json"
  run_split tokenize -m "$BATS_TEST_TMPDIR/t.json" --output-format bin -o "$BATS_TEST_TMPDIR/x.bin" <<<"a"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"has no end-of-text token"*"--eot"* ]]
}

@test "tokenize --special-tokens keep matches <|endoftext|>, split tokenizes its text" {
  run tokenize -m "$(gpt2)" <<<"a<|endoftext|>b"
  [ "$output" = "64 50256 65" ]
  run tokenize -m "$(gpt2)" --special-tokens keep <<<"a<|endoftext|>b"
  [ "$output" = "64 50256 65" ]
  run tokenize -m "$(gpt2)" --special-tokens split <<<"a<|endoftext|>b"
  [ "$output" = "64 27 91 437 1659 5239 91 29 65" ]
}

@test "tokenize --add-special-tokens is the default; --no-special-tokens drops the template's" {
  run tokenize -m "$T" --add-special-tokens <<<"hug"
  [ "$output" = "2 17 3" ]
  run tokenize -m "$T" --no-special-tokens <<<"hug"
  [ "$output" = "17" ]
  printf 'add-special-tokens: false\n' >"$BATS_TEST_TMPDIR/c.yaml"
  run tokenize -m "$T" -c "$BATS_TEST_TMPDIR/c.yaml" <<<"hug"
  [ "$output" = "17" ]
}

@test "tokenize --pair: [CLS] A [SEP] B [SEP] with type ids" {
  run tokenize -m "$T" --pair --type-ids <<<$'hug pug\tbun'
  [ "$output" = $'2 17 19 3 22 3\t0 0 0 0 1 1' ]
  run_split tokenize -m "$T" --pair <<<$'hug\tpug\nno tab here'
  [ "$status" -eq 1 ]
  [ "$output" = "2 17 3 19 3" ]
  [[ "$stderr" == *"'<stdin>' line 2: --pair needs two segments separated by a tab"* ]]
}

@test "tokenize --max-length truncates, the template's tokens counted" {
  run tokenize -m "$T" --max-length 4 <<<"hug pug bun hugs"
  [ "$output" = "2 17 19 3" ]
  run tokenize -m "$T" --max-length 0 <<<"hug pug"
  [ "$output" = "2 17 19 3" ]
  run_split tokenize -m "$T" --max-length 1 <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--max-length 1 is smaller than the 2 special tokens"* ]]
  run_split tokenize -m "$T" --max-length -3 <<<"hug"
  [ "$status" -eq 2 ]
}

@test "tokenize --truncation longest-first, only-first, only-second, none (HF's rules)" {
  in=$'hug pug bun hugs pun hug\thug pug bun hugs pun pun pun'
  run tokenize -m "$T" --pair --max-length 9 --truncation longest-first <<<"$in"
  [ "$output" = "2 17 19 22 3 17 19 22 3" ]
  run tokenize -m "$T" --pair --max-length 11 --truncation only-first <<<$'hug pug bun hugs pun hug\thug pug bun'
  [ "$output" = "2 17 19 22 20 16 3 17 19 22 3" ]
  run tokenize -m "$T" --pair --max-length 9 --truncation only-second <<<$'hug\thug pug bun hugs pun pun pun'
  [ "$output" = "2 17 3 17 19 22 20 16 3" ]
  run tokenize -m "$T" --max-length 3 --truncation none <<<"hug pug bun"
  [ "$output" = "2 17 19 22 3" ]
  run_split tokenize -m "$T" --max-length 5 --truncation only-second <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--truncation only-second needs --pair"* ]]
  run_split tokenize -m "$T" --pair --max-length 5 --truncation only-first <<<$'hug\thug pug bun'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: cannot truncate to 5 tokens: the first sequence has only 1"* ]]
}

@test "tokenize --max-length equal to the template's tokens leaves only them, for every strategy (HF's rule)" {
  for st in longest-first only-first only-second; do
    run_split tokenize -m "$T" --pair --max-length 3 --truncation "$st" <<<$'hug pug\tbun'
    [ "$status" -eq 0 ]
    [ "$output" = "2 3 3" ]
  done
  run tokenize -m "$T" --max-length 2 --truncation only-first <<<"hug pug"
  [ "$output" = "2 3" ]
}

@test "tokenize: a tokenizer file whose truncation is shorter than its template is a format error naming the file" {
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); j["truncation"]={"direction":"Right","max_length":1,"strategy":"LongestFirst","stride":0}; json.dump(j,open(sys.argv[2],"w"))' \
    "$T" "$BATS_TEST_TMPDIR/short.json"
  run_split tokenize -m "$BATS_TEST_TMPDIR/short.json" <<<"hug"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"short.json': truncation max_length 1 is smaller than the 2 special tokens the template adds"* ]]
  [[ "$stderr" != *"--max-length"* ]]
  # --max-length overrides it
  run tokenize -m "$BATS_TEST_TMPDIR/short.json" --max-length 4 <<<"hug pug bun"
  [ "$output" = "2 17 19 3" ]
}

@test "tokenize --padding max pads to --max-length with --pad-token; attention mask 0 on pads" {
  run tokenize -m "$T" --max-length 5 --padding max --attention-mask <<<$'hug\nhug pug bun hugs'
  [ "$output" = $'2 17 3 0 0\t1 1 1 0 0\n2 17 19 22 3\t1 1 1 1 1' ]
  run tokenize -m "$T" --max-length 4 --padding max --pad-token '[UNK]' <<<"hug"
  [ "$output" = "2 17 3 1" ]
  run_split tokenize -m "$T" --padding max <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--padding max needs --max-length"* ]]
  run_split tokenize -m "$T" --max-length 4 --padding max --pad-token '<x>' <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--pad-token: '<x>' is not a token"* ]]
}

@test "tokenize --padding longest pads within each batch of -B records" {
  run tokenize -m "$T" --padding longest <<<$'hug\nhug pug bun\npug'
  [ "$output" = $'2 17 3 0 0\n2 17 19 22 3\n2 19 3 0 0' ]
  run tokenize -m "$T" --padding longest -B 2 <<<$'hug\nhug pug bun\npug'
  [ "$output" = $'2 17 3 0 0\n2 17 19 22 3\n2 19 3' ]
  run tokenize -m "$T" --padding none <<<$'hug\nhug pug'
  [ "$output" = $'2 17 3\n2 17 19 3' ]
  run_split tokenize -m "$T" -B 0 <<<"hug"
  [ "$status" -eq 2 ]
}

@test "tokenize --padding longest: batches are -B records, whatever their size and the input files" {
  # a record of over 4 MB (white space, one token) does not end its batch early
  { printf 'hug'; head -c 4200000 /dev/zero | tr '\0' ' '; printf '\nhug pug bun\npug\n'; } >"$BATS_TEST_TMPDIR/big.txt"
  run tokenize -m "$T" --padding longest -B 2 "$BATS_TEST_TMPDIR/big.txt"
  [ "$status" -eq 0 ]
  [ "$output" = $'2 17 3 0 0\n2 17 19 22 3\n2 19 3' ]
  # nor does the end of an input file
  printf 'hug\n' >"$BATS_TEST_TMPDIR/a.txt"
  printf 'hug pug bun\npug\n' >"$BATS_TEST_TMPDIR/b.txt"
  run tokenize -m "$T" --padding longest -B 2 "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
  [ "$status" -eq 0 ]
  [ "$output" = $'2 17 3 0 0\n2 17 19 22 3\n2 19 3' ]
  # messages still name the file and line of a record
  printf 'hug\tpug\n' >"$BATS_TEST_TMPDIR/c.txt"
  printf 'bun\n' >"$BATS_TEST_TMPDIR/d.txt"
  run_split tokenize -m "$T" --pair --padding longest "$BATS_TEST_TMPDIR/c.txt" "$BATS_TEST_TMPDIR/d.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"d.txt' line 1: --pair needs two segments"* ]]
}

@test "tokenize --type-ids and --attention-mask add tab-separated columns, not to bin" {
  run tokenize -m "$T" --type-ids --attention-mask --output-format piece <<<"hug"
  [ "$output" = $'[CLS] hug</w> [SEP]\t0 0 0\t1 1 1' ]
  run_split tokenize -m "$T" --output-format bin --type-ids -o "$BATS_TEST_TMPDIR/x" <<<"hug"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--type-ids and --attention-mask need a text output format"* ]]
}

@test "tokenize -i, FILE arguments and -o" {
  printf 'hug\n' >"$BATS_TEST_TMPDIR/a.txt"
  printf 'pug\n' >"$BATS_TEST_TMPDIR/b.txt"
  tokenize -m "$T" -i "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt" -o "$BATS_TEST_TMPDIR/out"
  [ "$(cat "$BATS_TEST_TMPDIR/out")" = $'2 17 3\n2 19 3' ]
  run_split tokenize -m "$T" "$BATS_TEST_TMPDIR/missing.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot open '$BATS_TEST_TMPDIR/missing.txt'"* ]]
}

@test "tokenize -o into a named pipe (or a device such as /dev/null) writes into it, never replaces it" {
  mkfifo "$BATS_TEST_TMPDIR/fifo"
  timeout 20 cat "$BATS_TEST_TMPDIR/fifo" >"$BATS_TEST_TMPDIR/got" &
  run tokenize -m "$T" -o "$BATS_TEST_TMPDIR/fifo" <<<"hug"
  wait
  [ "$status" -eq 0 ]
  [ -p "$BATS_TEST_TMPDIR/fifo" ]
  [ "$(cat "$BATS_TEST_TMPDIR/got")" = "2 17 3" ]
}

@test "tokenize -z: NUL-separated records may hold newlines" {
  run bash -c "printf 'a\nb\0c' | tokenize -m '$(gpt2)' -z | tr '\0' '|'"
  [ "$output" = "64 198 65|66|" ]
}

@test "tokenize -t: any thread count gives the same bytes, in input order" {
  need_shared
  head -c 300000 "$SHARED/data/lm/valid.txt" >"$BATS_TEST_TMPDIR/in.txt"
  tokenize -m "$(gpt2)" -t 1 -B 7 "$BATS_TEST_TMPDIR/in.txt" >"$BATS_TEST_TMPDIR/t1"
  tokenize -m "$(gpt2)" -t 2 -B 100 "$BATS_TEST_TMPDIR/in.txt" >"$BATS_TEST_TMPDIR/t2"
  tokenize -m "$(gpt2)" --threads 4 "$BATS_TEST_TMPDIR/in.txt" >"$BATS_TEST_TMPDIR/t4"
  cmp "$BATS_TEST_TMPDIR/t1" "$BATS_TEST_TMPDIR/t2"
  cmp "$BATS_TEST_TMPDIR/t1" "$BATS_TEST_TMPDIR/t4"
  [ "$(wc -l <"$BATS_TEST_TMPDIR/t1")" -eq "$(wc -l <"$BATS_TEST_TMPDIR/in.txt")" ]
  run_split tokenize -m "$(gpt2)" -t -1 </dev/null
  [ "$status" -eq 2 ]
}

@test "tokenize: invalid UTF-8 is replaced, counted and warned about once; --strict refuses it" {
  run_split tokenize -m "$(gpt2)" < <(printf 'caf\xe9\nok\n\xff\xfe\n')
  [ "$status" -eq 0 ]
  [ "$output" = $'66 1878 4210\n482\n6353' ]
  [ "$(grep -c warning <<<"$stderr")" -eq 1 ]
  [[ "$stderr" == *"replaced 3 invalid UTF-8 sequences with U+FFFD (the first at '<stdin>' line 1 byte 3)"* ]]
  run_split tokenize -m "$(gpt2)" -q < <(printf 'caf\xe9\n')
  [ -z "$stderr" ]
  run_split tokenize -m "$(gpt2)" --strict < <(printf 'ok\ncaf\xe9\n')
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 2 byte 6: invalid UTF-8"* ]]
}

@test "tokenize: an empty input gives an empty output" {
  run_split tokenize -m "$(gpt2)" </dev/null
  [ "$status" -eq 0 ]
  [ -z "$output" ]
}

@test "tokenize --pair: the end-of-text token is checked against the pair template, not the single one" {
  # single template "<s> $A", pair template "<s> $A <eos> $B": <eos> separates
  # single records but sits inside every pair record
  P="$NLPIPE_TOP/tests/data/tok/pair-eos-template.json"
  tokenize -m "$P" --output-format bin -o "$BATS_TEST_TMPDIR/s.bin" <<<"a"
  run od -A n -t u2 -j 16 -N 2 "$BATS_TEST_TMPDIR/s.bin"
  [ "$(echo $output)" = "2" ]
  run_split tokenize -m "$P" --pair --output-format bin -o "$BATS_TEST_TMPDIR/p.bin" <<<$'a\tb'
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"adds <eos> to every record through its template"*"--pair --no-special-tokens --output-format bin"* ]]
  run_split tokenize -m "$P" --pair --output-format bin --eot '<eos>' -o "$BATS_TEST_TMPDIR/p.bin" <<<$'a\tb'
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--eot: '<eos>' is added to every record by the template"* ]]
}

@test "tokenize -m codes: a character in no merge passes through as subword-nmt's apply-bpe does; --output-format subword-nmt writes its '@@' pieces" {
  # apply-bpe with these codes: Übung -> Ü b u n g</w> -> Ü b un g</w> -> Ü bun g</w> -> Ü bung</w>,
  # printed "Ü@@ bung"; a one-character word stays as it is
  printf '#version: 0.2\nu n\nu g</w>\nh ug</w>\nb un\nbun g</w>\n' >"$BATS_TEST_TMPDIR/codes"
  run_split tokenize -m "$BATS_TEST_TMPDIR/codes" --output-format piece <<<$'\xc3\x9cbung hug\nbung \xc3\x9c\xc3\x9c x'
  [ "$status" -eq 0 ]
  [ "$output" = $'\xc3\x9c bung</w> hug</w>\nbung</w> \xc3\x9c \xc3\x9c</w> x</w>' ]
  run_split tokenize -m "$BATS_TEST_TMPDIR/codes" --output-format subword-nmt <<<$'\xc3\x9cbung hug\nbung \xc3\x9c\xc3\x9c x'
  [ "$status" -eq 0 ]
  [ "$output" = $'\xc3\x9c@@ bung hug\nbung \xc3\x9c@@ \xc3\x9c x' ]
  # ids have no id for it: the unknown token (0) stands in
  run tokenize -m "$BATS_TEST_TMPDIR/codes" <<<$'\xc3\x9cbung'
  [ "$output" = "0 15" ]
  # a WordPiece vocabulary marks continuations with ##; special tokens are words of their own
  mkdir "$BATS_TEST_TMPDIR/wp" && printf '[UNK]\n[CLS]\n[SEP]\nhug\n##s\n##g\nb\n' >"$BATS_TEST_TMPDIR/wp/vocab.txt"
  run tokenize -m "$BATS_TEST_TMPDIR/wp/vocab.txt" --output-format subword-nmt <<<"hugs b hugsg"
  [ "$output" = "[CLS] hug@@ s b hug@@ s@@ g [SEP]" ]
  # classic BPE with </w> (the fixture, which has no 'u</w>': HF's pieces say [UNK] there)
  run tokenize -m "$T" --no-special-tokens --output-format piece <<<"hugs bun pu"
  [ "$output" = "hugs</w> bun</w> p [UNK]" ]
  run tokenize -m "$T" --no-special-tokens --output-format subword-nmt <<<"hugs bun pu"
  [ "$output" = "hugs bun p@@ u" ]
}

@test "tokenize --output-format subword-nmt: a tokenizer that marks no word ends is a usage error" {
  run_split tokenize -m "$(gpt2)" --output-format subword-nmt <<<"x"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"subword-nmt needs a tokenizer that marks word ends"* ]]
}

@test "tokenize -o onto a symbolic link writes its target, as '>' does (the link stays; a dangling one gets its file)" {
  cd "$BATS_TEST_TMPDIR"
  mkdir real && printf 'old\n' >real/out.txt && ln -s real/out.txt link.txt && ln -s ../real/new.txt real/dangling.txt
  tokenize -m "$T" --no-special-tokens -o link.txt <<<"hug"
  [ -L link.txt ] && [ "$(readlink link.txt)" = real/out.txt ]
  [ "$(cat real/out.txt)" = "17" ]
  tokenize -m "$T" --no-special-tokens -o real/dangling.txt <<<"bug"
  [ -L real/dangling.txt ] && [ "$(cat real/new.txt)" = "$(tokenize -m "$T" --no-special-tokens <<<bug)" ]
  [ -z "$(ls real | grep tmp)" ]
}

@test "tokenize -o: a writable file in a read-only directory is written only with --in-place, else a clear error" {
  # as root the directory's mode does not stop us: run as nobody then
  as_user=()
  if [ "$(id -u)" -eq 0 ]; then
    command -v setpriv >/dev/null || skip "root without setpriv: cannot make a directory read-only"
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  d="$(mktemp -d "${TMPDIR:-/tmp}/nlpipe-ro.XXXXXX")"
  chmod 755 "$d" && cp "$T" "$NLPIPE_BIN/tokenize" "$d/" && mkdir "$d/ro" && printf 'old\n' >"$d/ro/out.txt"
  if [ "$(id -u)" -eq 0 ]; then chown 65534 "$d/ro/out.txt"; fi
  chmod 555 "$d/ro"
  run_split "${as_user[@]}" "$d/tokenize" -m "$d/hug-template.json" --no-special-tokens -o "$d/ro/out.txt" <<<"hug"
  st=$status err=$stderr
  [ "$(cat "$d/ro/out.txt")" = old ] || { chmod 755 "$d/ro"; rm -rf "$d"; false; }
  run_split "${as_user[@]}" "$d/tokenize" -m "$d/hug-template.json" --no-special-tokens --in-place -o "$d/ro/out.txt" <<<"hug"
  got="$(cat "$d/ro/out.txt")"
  chmod 755 "$d/ro" && rm -rf "$d"
  [ "$st" -eq 1 ]
  [[ "$err" == "tokenize: cannot replace '$d/ro/out.txt' atomically: no temporary file can be created in its directory (Permission denied); the file itself is writable: --in-place writes it in place"* ]]
  [ "$status" -eq 0 ]
  [ "$got" = 17 ]
}

@test "tokenize: a BERT token stream takes one try: the first message gives the command that works" {
  B="$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt"
  [ -f "$B" ] || B="$NLPIPE_TOP/tests/data/golden/vectors/tokenize/bert-base-uncased.json"
  printf 'hello world\nsecond document\n' >"$BATS_TEST_TMPDIR/in.txt"
  run_split tokenize -m "$B" --output-format bin -o "$BATS_TEST_TMPDIR/x.bin" "$BATS_TEST_TMPDIR/in.txt"
  [ "$status" -eq 2 ]
  cmd="$(sed -n "s/.*: \(tokenize -m .*--output-format bin\)\$/\1/p" <<<"$stderr")"
  [ -n "$cmd" ] || { echo "no command in: $stderr"; false; }
  eval "$cmd" -o "$BATS_TEST_TMPDIR/x.bin" "$BATS_TEST_TMPDIR/in.txt"
  run tokenize -m "$B" -d "$BATS_TEST_TMPDIR/x.bin"
  [ "$output" = $'hello world\nsecond document' ]
  # naming [SEP] as --eot: the same advice, with it
  run_split tokenize -m "$B" --output-format bin --eot '[SEP]' -o "$BATS_TEST_TMPDIR/y.bin" <"$BATS_TEST_TMPDIR/in.txt"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--no-special-tokens --eot '[SEP]' --output-format bin"* ]]
}

@test "tokenize --progress: share of the input read, rate, time left, lines and tokens; -v ends with a summary" {
  for i in $(seq 1 300); do echo "Hello world $i"; done >"$BATS_TEST_TMPDIR/in.txt"
  run_split tokenize -m "$T" --progress -B 100 "$BATS_TEST_TMPDIR/in.txt"
  [ "$status" -eq 0 ]
  [ "$(wc -l <<<"$output")" -eq 300 ]
  lines="$(tr '\r' '\n' <<<"$stderr" | grep .)"
  grep -Eq '^tokenize: [0-9]+% of 0\.0 MB, [0-9.]+ MB/s, [^,]+ left, 100 lines, [0-9]+ tokens' <<<"$lines" || { echo "$lines"; false; }
  grep -Eq '^tokenize: 100% of 0\.0 MB, [0-9.]+ MB/s, [0-9.]+ s, 300 lines, [0-9]+ tokens' <<<"$lines" || { echo "$lines"; false; }
  # from a pipe the size is unknown: no share; off a terminal nothing by default
  run_split bash -c 'cat "$1" | tokenize -m "$2" --progress >/dev/null' _ "$BATS_TEST_TMPDIR/in.txt" "$T"
  [[ "$stderr" =~ tokenize:\ 0\.0\ MB,\ [0-9.]+\ MB/s,\ [0-9.]+\ s,\ 300\ lines ]] || { echo "$stderr"; false; }
  run_split tokenize -m "$T" "$BATS_TEST_TMPDIR/in.txt"
  [ -z "$stderr" ]
  n="$(tokenize -m "$T" --no-special-tokens "$BATS_TEST_TMPDIR/in.txt" | wc -w)"
  run_split tokenize -m "$T" --no-special-tokens -v "$BATS_TEST_TMPDIR/in.txt"
  [[ "$stderr" =~ tokenize:\ 300\ lines,\ $n\ tokens,\ 0\.0\ MB\ in\ [0-9.]+\ s\ \([0-9.]+\ MB/s,\ [0-9]+\ tokens/s\) ]] || { echo "$stderr"; false; }
  run_split bash -c 'tokenize -m "$1" "$2" | tokenize -m "$1" -d -v >/dev/null' _ "$T" "$BATS_TEST_TMPDIR/in.txt"
  [[ "$stderr" == *"300 records, "*" tokens decoded in "* ]]
}
