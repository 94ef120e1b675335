#!/usr/bin/env bats
# The bad-input table: every tool fed truncated, empty, binary, wrong-format,
# wrong-version, huge-line and invalid-UTF-8 input, wrong option combinations
# and files of the wrong kind (a tokenizer where a model is expected, a BERT
# checkpoint to translate, a GPT run to fine-tune as BERT...). Each @test is
# one row: `row STATUS 'PATTERN' COMMAND...` runs COMMAND (standard input
# /dev/null) and asserts no signal death (status < 128), the documented
# exit status (README Conventions: 0 ok, 1 bad data or I/O, 2 usage, 3 bad
# model, tokenizer or config file), a message matching PATTERN (a glob:
# the file, and the line, byte or field where it is wrong), and that no
# output was left behind on failure: nothing at $O (every row writes its
# file or run directory there) and no *.tmp.* or hidden temporary anywhere.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/ref.de" "$D/hyp.de" >corpus.txt
  head -20 "$D/src.en" >text.txt
  : >empty.txt
  python3 - <<'PY'
import random, struct, json
r = random.Random(5)
open('binary.bin', 'wb').write(bytes(r.randrange(256) for _ in range(3000)))
open('badutf8.txt', 'wb').write(b'Hello world.\nA second line.\nbad \xff\xfe here \xc3\n')
open('huge.txt', 'w').write('word ' * 60000 + '\n')
PY
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o tok.json corpus.txt
  "$NLPIPE_BIN/train-wordpiece" -q --vocab-size 600 -o wp.json "$D/src.en" "$D/tgt.de"
  head -160 "$D/src.en" >train.en
  head -160 "$D/tgt.de" >train.de
  paste train.en train.de >par.tsv
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o mt.json train.en train.de
  head -c 300 tok.json >trunc-tok.json
  "$NLPIPE_BIN/tokenize" -m tok.json --output-format bin -o train.bin corpus.txt
  head -c 20 train.bin >trunc.bin
  # issue 34: streams of another tokenizer (with and without the fingerprint), another end-of-text id
  "$NLPIPE_BIN/tokenize" -m mt.json --output-format bin -o other.bin corpus.txt
  python3 -c "b = bytearray(open('other.bin', 'rb').read()); b[20:28] = bytes(8); open('other-old.bin', 'wb').write(b)"
  python3 -c "b = bytearray(open('train.bin', 'rb').read()); b[16] = 5; open('eot5.bin', 'wb').write(b)"
  # and junk given as text: compressed, a model, ids
  gzip -c corpus.txt >corpus.gz
  "$NLPIPE_BIN/tokenize" -m tok.json -o ids.txt corpus.txt
  python3 -c "b = bytearray(open('train.bin', 'rb').read()); b[4] = 9; open('v9.bin', 'wb').write(b)"
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >docs.txt
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >cls.tsv
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>cls.tsv
  printf 'en\tgood\nde\n' >fields.tsv
  printf 'en\tgood\n\tno label\n' >nolabel.tsv
  printf 'en\tgood\nde\t\n' >notext.tsv
  printf 'en\tgood\nde\r\nfr\tbon\n' >crlf.tsv
  printf 'en\tgood\tday\nde\tgut\tTag\n' >labpair.tsv
  local Q=(--preset tiny -t 1 -q)
  "$NLPIPE_BIN/pretrain" "${Q[@]}" --max-length 32 -B 4 --steps 2 --tokenizer tok.json -m gpt corpus.txt
  "$NLPIPE_BIN/pretrain" --arch bert "${Q[@]}" --tokenizer wp.json --steps 2 -B 8 --max-length 48 -m bert docs.txt
  "$NLPIPE_BIN/pretrain" --arch transformer "${Q[@]}" --tokenizer mt.json --src train.en --tgt train.de --steps 2 \
    --batch-tokens 600 -m mt
  "$NLPIPE_BIN/finetune" -t 1 -q -B 16 --max-length 48 --init bert --epochs 1 -m cls cls.tsv
  cp gpt/latest/model.safetensors model.safetensors
  # runs without a tokenizer beside their models, and a directory without a model
  "$NLPIPE_BIN/pretrain" "${Q[@]}" --max-length 32 -B 4 --steps 2 -m gpt-notok train.bin
  mkdir mt-notok nomodel && cp mt/latest/model.safetensors mt-notok/
  mkdir modeldir && cp model.safetensors gpt/latest/tokenizer.json modeldir/
  head -c 1000 model.safetensors >trunc-model.safetensors
  # a training state of a later format version
  cp -r gpt gpt-v2
  python3 - <<'PY'
import json, struct
p = 'gpt-v2/latest/train_state.safetensors'
b = open(p, 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); h['__metadata__']['version'] = '2'
j = json.dumps(h).encode(); j += b' ' * (-(8 + len(j)) % 8)
open(p, 'wb').write(struct.pack('<Q', len(j)) + j + b[8 + n:])
PY
  # a model whose configuration names an architecture that does not exist
  python3 - <<'PY'
import json, struct
b = open('model.safetensors', 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n]); m = h['__metadata__']
m['model'] = 'mamba'; m.pop('nlpipe_config')
j = json.dumps(h).encode(); j += b' ' * (-(8 + len(j)) % 8)
open('mamba.safetensors', 'wb').write(struct.pack('<Q', len(j)) + j + b[8 + n:])
PY
}

setup() {
  W="$BATS_FILE_TMPDIR"
  O="$BATS_TEST_TMPDIR/out"
  cd "$W"
}

# row STATUS PATTERN COMMAND...
row() {
  local want="$1" pat="$2"
  shift 2
  run_split "$@" </dev/null
  [ "$status" -lt 128 ] || { echo "killed by signal $((status - 128)): $stderr"; false; }
  [ "$status" -eq "$want" ] || { echo "status $status, expected $want: $stderr"; false; }
  # shellcheck disable=SC2053
  [[ "$stderr" == $pat ]] || { echo "message: $stderr"; echo "expected: $pat"; false; }
  if [ "$want" -ne 0 ]; then
    [ ! -e "$O" ] || { echo "left behind: $O"; ls -la "$O"; false; }
  fi
  local left
  left="$(find "$W" "$BATS_TEST_TMPDIR" \( -name '*.tmp.*' -o -name '.*' \) -print | grep -v "/\.\?$" || true)"
  [ -z "$left" ] || { echo "left behind: $left"; false; }
}

GPT=(--preset tiny -t 1 -q --max-length 32 -B 4 --steps 2)
FT=(-t 1 -q -B 16 --max-length 48 --epochs 1)
MT=(--arch transformer --preset tiny -t 1 -q --steps 2 --batch-tokens 600)

# --- tokenize (issue 14/15: rows that fail today are skipped)

@test "tokenize: empty input is empty output" { row 0 "" tokenize -m tok.json -o "$O" empty.txt; [ ! -s "$O" ]; }
@test "tokenize: binary input is repaired, with a warning naming line and byte" {
  row 0 "*replaced 1278 invalid UTF-8 sequences*'binary.bin' line 1 byte 0*" tokenize -m tok.json -o "$O" binary.bin; }
@test "tokenize: invalid UTF-8 with --strict" {
  row 1 "*'badutf8.txt' line 3 byte 32: invalid UTF-8*" tokenize -m tok.json --strict -o "$O" badutf8.txt; }
@test "tokenize: a huge line" { row 0 "" tokenize -m tok.json -o "$O" huge.txt; [ "$(wc -w <"$O")" -ge 60000 ]; }
@test "tokenize: an empty tokenizer" { row 3 "*'empty.txt'*" tokenize -m empty.txt -o "$O" text.txt; }
@test "tokenize: a binary tokenizer" { row 3 "*'binary.bin' byte 0: invalid UTF-8*" tokenize -m binary.bin -o "$O" text.txt; }
@test "tokenize: a model where a tokenizer is expected" {
  row 3 "*'model.safetensors' is a safetensors file (a model?), not a tokenizer*" tokenize -m model.safetensors -o "$O" text.txt; }
@test "tokenize: a run directory where a tokenizer is expected" {
  row 3 "*'gpt': no tokenizer in this directory*" tokenize -m gpt -o "$O" text.txt; }
@test "tokenize: a truncated tokenizer" { row 3 "*'trunc-tok.json'*" tokenize -m trunc-tok.json -o "$O" text.txt; }
@test "tokenize: a truncated token stream" {
  row 3 "*'trunc.bin': truncated token stream header (20 of 32 bytes)*" tokenize -m tok.json -d --input-format bin -o "$O" trunc.bin; }
@test "tokenize: a token stream of another version" {
  row 3 "*'v9.bin': token stream version 9 is not supported*" tokenize -m tok.json -d --input-format bin -o "$O" v9.bin; }
@test "tokenize: text to decode" { row 1 "*'text.txt' line 1: 'Unable' is not a token of 'tok.json'*" tokenize -m tok.json -d -o "$O" text.txt; }
@test "tokenize: --pair without a tab" { row 1 "*'text.txt' line 1: --pair needs two segments*" tokenize -m tok.json --pair -o "$O" text.txt; }
@test "tokenize: a full disk" { row 1 "*cannot write '/dev/full': No space left on device*" tokenize -m tok.json -o /dev/full text.txt; }
@test "tokenize: a bad option value" { row 2 "*--max-length*" tokenize -m tok.json --max-length -1 -o "$O" text.txt; }

# --- train-bpe, train-wordpiece

@test "train-bpe: empty input" { row 1 "*no words to learn from: the input is empty*" train-bpe --vocab-size 300 -o "$O" empty.txt; }
@test "train-bpe: invalid UTF-8 with --strict" {
  row 1 "*'badutf8.txt' line 3 byte 32: invalid UTF-8*" train-bpe --vocab-size 300 --strict -o "$O" badutf8.txt; }
@test "train-bpe: binary input" {
  row 1 "*'binary.bin' line * byte *: a NUL byte: a JSON vocabulary cannot hold it*" train-bpe --vocab-size 300 -o "$O" binary.bin; }
@test "train-bpe: a huge line" { row 0 "*" train-bpe --vocab-size 300 -q -o "$O" huge.txt; }
@test "train-bpe: a full disk" { row 1 "*cannot write '/dev/full': No space left on device*" train-bpe -q --vocab-size 300 -o /dev/full text.txt; }
@test "train-bpe: a directory as input" { row 1 "*'gpt'*directory*" train-bpe --vocab-size 300 -o "$O" gpt; }
@test "train-wordpiece: empty input" { row 1 "*no words to learn from: the input is empty*" train-wordpiece --vocab-size 300 -o "$O" empty.txt; }
@test "train-wordpiece: invalid UTF-8 with --strict" {
  row 1 "*'badutf8.txt' line 3 byte 32: invalid UTF-8*" train-wordpiece --vocab-size 300 --strict -o "$O" badutf8.txt; }
@test "train-wordpiece: binary input is repaired, with a warning" {
  row 0 "*'binary.bin' line 1 byte 0*" train-wordpiece --vocab-size 300 -o "$O" binary.bin; }
@test "train-wordpiece: a full disk" {
  row 1 "*cannot write '/dev/full': No space left on device*" train-wordpiece -q --vocab-size 300 -o /dev/full text.txt; }

# --- bleu

@test "bleu: an empty reference" { row 1 "*'text.txt' has 20 lines but 'empty.txt' has 0*" bleu empty.txt -i text.txt; }
@test "bleu: an empty hypothesis" { row 1 "*'empty.txt' is empty: no hypotheses to score*" bleu text.txt -i empty.txt; }
@test "bleu: a binary hypothesis" { row 1 "*'binary.bin' line 1 (byte 0): invalid UTF-8*" bleu text.txt -i binary.bin; }
@test "bleu: invalid UTF-8 in a reference" { row 1 "*'badutf8.txt' line 3 (byte 32): invalid UTF-8*" bleu badutf8.txt -i badutf8.txt; }
@test "bleu: a huge line" { row 0 "" bleu huge.txt -i huge.txt -b; }
@test "bleu: a bad option value" { row 2 "*--tokenize*'nope'*" bleu text.txt -i text.txt --tokenize nope; }
@test "bleu: a missing file" { row 1 "*cannot open 'nosuch.txt': No such file or directory*" bleu nosuch.txt -i text.txt; }
@test "bleu: standard output on a full disk" {
  [ -w /dev/full ] || skip "no /dev/full"
  row 1 "*cannot write to standard output: No space left on device*" bash -c 'bleu text.txt -i text.txt >/dev/full'; }

# --- pretrain

@test "pretrain: empty input without a tokenizer" {
  row 1 "*'empty.txt' is not a token stream (it is empty)*" pretrain "${GPT[@]}" -m "$O" empty.txt; }
@test "pretrain: empty text" { row 1 "*empty.txt: 0 tokens, fewer than one training window*" pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" empty.txt; }
@test "pretrain: binary input without a tokenizer" {
  row 1 "*'binary.bin' is not a token stream (no NLTK or llm.c header)*" pretrain "${GPT[@]}" -m "$O" binary.bin; }
@test "pretrain: binary text is refused, read (repaired, with a warning) with --force" {
  row 1 "*'binary.bin' is binary data (it holds NUL bytes): not text; --force reads it as text anyway*" \
    pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" binary.bin
  row 0 "*12 lines of invalid UTF-8 repaired*" pretrain "${GPT[@]}" --force --tokenizer tok.json -m "$O" binary.bin; }
@test "pretrain: a truncated token stream" {
  row 3 "*'trunc.bin': truncated token stream header (20 of 32 bytes)*" pretrain "${GPT[@]}" -m "$O" trunc.bin; }

# issue 34.1: a stream made by another tokenizer than the run's, the model's or the scorer's
@test "pretrain: a stream of another tokenizer (its header's fingerprint)" {
  row 1 "*'other.bin' was made by another tokenizer than 'tok.json'*" pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" other.bin; }
@test "pretrain: a stream of another tokenizer (an old header: its vocabulary)" {
  row 1 "*'other-old.bin' holds ids of a 500-token vocabulary, 'tok.json' has 400 tokens*" \
    pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" other-old.bin; }
@test "pretrain: a stream of another end-of-text id" {
  row 1 "*'eot5.bin' separates documents with id 5 (*), but 'tok.json' ends text with id 0*--eot*" \
    pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" eot5.bin; }
@test "pretrain --init: a stream of another tokenizer than the model's" {
  row 1 "*'other.bin' was made by another tokenizer than 'gpt'*" pretrain "${GPT[@]}" --init gpt -m "$O" other.bin; }
@test "generate --perplexity: a stream of another tokenizer than the model's" {
  row 1 "*'other.bin' was made by another tokenizer than 'gpt'*" generate -m gpt --perplexity other.bin; }
# issue 34.2: a run that will hold no tokenizer says so at its start
@test "pretrain: token streams and no tokenizer: a warning" {
  row 0 "pretrain: no tokenizer (--tokenizer): the run's checkpoints will hold none*" \
    pretrain --preset tiny -t 1 --no-progress --max-length 32 -B 4 --steps 1 -m "$O" train.bin; }
# issue 34.3: junk given as text is refused (--force reads it)
@test "pretrain: compressed text" {
  row 1 "*'corpus.gz' is gzip-compressed data: decompress it first (gzip -dc); --force reads it as text anyway*" \
    pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" corpus.gz; }
@test "pretrain: a model given as text" {
  row 1 "*'model.safetensors' is a safetensors file (model weights): not text*" \
    pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" model.safetensors; }
@test "pretrain: token ids given as text" {
  row 1 "*'ids.txt' is lines of numbers only (token ids*--output-format bin*" pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" ids.txt; }
@test "pretrain: token ids given as text from a pipe" {
  row 1 "*'<stdin>' is lines of numbers only*" bash -c 'exec pretrain "$@" - <ids.txt' _ "${GPT[@]}" --tokenizer tok.json -m "$O"; }
@test "pretrain --arch bert: compressed text" {
  row 1 "*'corpus.gz' is gzip-compressed data*" pretrain --arch bert "${GPT[@]}" --tokenizer wp.json -m "$O" corpus.gz; }
@test "pretrain --arch transformer: a model given as text" {
  row 1 "*'model.safetensors' is a safetensors file*" pretrain "${MT[@]}" --tokenizer mt.json --src model.safetensors --tgt train.de -m "$O"; }
@test "pretrain: a token stream of another version" {
  row 3 "*'v9.bin': token stream version 9 is not supported*" pretrain "${GPT[@]}" -m "$O" v9.bin; }
@test "pretrain: a huge line" { row 0 "" pretrain "${GPT[@]}" --tokenizer tok.json -m "$O" huge.txt; }
@test "pretrain: a binary tokenizer" {
  row 3 "*'binary.bin' byte 0: invalid UTF-8*" pretrain "${GPT[@]}" --tokenizer binary.bin -m "$O" corpus.txt; }
@test "pretrain: a model where a tokenizer is expected" {
  row 3 "*'model.safetensors' is a safetensors file (a model?), not a tokenizer*" pretrain "${GPT[@]}" --tokenizer model.safetensors -m "$O" corpus.txt; }
@test "pretrain: a tokenizer where a model is expected" {
  row 3 "*'tok.json': not a safetensors file (it looks like JSON*byte 0*" pretrain "${GPT[@]}" --init tok.json -m "$O" train.bin; }
@test "pretrain: text where a model is expected" {
  row 3 "*'text.txt': not a safetensors file (it looks like text)*" pretrain "${GPT[@]}" --init text.txt -m "$O" train.bin; }
@test "pretrain: an empty model" {
  row 3 "*'empty.txt': not a safetensors file*0 bytes*" pretrain "${GPT[@]}" --init empty.txt -m "$O" train.bin; }
@test "pretrain: a truncated model" {
  row 3 "*'trunc-model.safetensors': truncated safetensors file*" pretrain "${GPT[@]}" --init trunc-model.safetensors -m "$O" train.bin; }
@test "pretrain: a model of an architecture that does not exist" {
  row 3 "*'mamba.safetensors'*mamba*" pretrain "${GPT[@]}" --init mamba.safetensors -m "$O" train.bin; }
@test "pretrain: a BERT checkpoint to continue as GPT" {
  row 3 "*'bert/latest' holds a bert model, not gpt*" pretrain "${GPT[@]}" --init bert -m "$O" train.bin; }
@test "pretrain: a training state of another version" {
  row 3 "*'gpt-v2/latest/train_state.safetensors': training state version '2', this build reads version 1*" \
    pretrain --resume gpt-v2 -t 1 -q --steps 4 -m "$O"; }
@test "pretrain: a file to resume" {
  row 3 "*'text.txt' is not a checkpoint to resume*" pretrain --resume text.txt -t 1 -q -m "$O" train.bin; }
@test "pretrain: a model directory to resume" {
  row 3 "*'modeldir' is not a checkpoint to resume*" pretrain --resume modeldir -t 1 -q -m "$O" train.bin; }
@test "pretrain: a finetune run to resume" {
  row 3 "*'cls' is a checkpoint of finetune, not of pretrain*" pretrain --resume cls -t 1 -q -m "$O" train.bin; }
@test "pretrain: nothing to resume" { row 3 "*cannot open 'nosuch': No such file or directory*" pretrain --resume nosuch -t 1 -q -m "$O"; }
@test "pretrain: a config file that is binary" {
  row 3 "*'binary.bin'*not a YAML text file*" pretrain "${GPT[@]}" -c binary.bin -m "$O" train.bin; }
@test "pretrain: a log on a full disk" {
  row 1 "*cannot write log '/dev/full': No space left on device*" pretrain "${GPT[@]}" --log /dev/full -m "$O" train.bin; }
@test "pretrain: a run directory that is a file" { row 1 "*'/dev/full' is not a directory*" pretrain "${GPT[@]}" -m /dev/full train.bin; }
@test "pretrain: --init and --resume" { row 2 "*--init and --resume exclude each other*" pretrain "${GPT[@]}" --init gpt --resume gpt -m "$O"; }
@test "pretrain: no steps and no time" { row 2 "*give --steps N or --max-time MINUTES*" pretrain --preset tiny -m "$O" train.bin; }
@test "pretrain: --src for gpt" { row 2 "*are for --arch transformer*" pretrain "${GPT[@]}" --src train.en --tgt train.de -m "$O"; }
@test "pretrain: sizes with --init" { row 2 "*--layers: the model comes from --init*" pretrain "${GPT[@]}" --init gpt --layers 3 -m "$O" train.bin; }
@test "pretrain --arch bert: a BPE tokenizer" {
  row 3 "*the tokenizer 'tok.json' has no [[]CLS] token*" pretrain --arch bert "${GPT[@]}" --tokenizer tok.json -m "$O" docs.txt; }
@test "pretrain --arch bert: empty input" {
  row 1 "*'empty.txt': the training data holds 0 documents*" pretrain --arch bert "${GPT[@]}" --tokenizer wp.json -m "$O" empty.txt; }
@test "pretrain --arch bert: binary input" {
  row 1 "*'binary.bin': no document of the training data has two sentences*" pretrain --arch bert "${GPT[@]}" --force --tokenizer wp.json -m "$O" binary.bin; }
@test "pretrain --arch bert: a huge line" {
  row 1 "*'huge.txt': the training data holds 1 document*" pretrain --arch bert "${GPT[@]}" --tokenizer wp.json -m "$O" huge.txt; }
@test "pretrain --arch bert: --batch-tokens" {
  row 2 "*--batch-tokens: BERT batches are -B examples*" pretrain --arch bert "${GPT[@]}" --tokenizer wp.json --batch-tokens 9 -m "$O" docs.txt; }
@test "pretrain --arch transformer: a tokenizer without <pad>" {
  row 3 "*'tok.json' has no padding token*" pretrain "${MT[@]}" --tokenizer tok.json --src train.en --tgt train.de -m "$O"; }
@test "pretrain --arch transformer: files that do not align" {
  row 1 "*'train.en' has 160 lines and 'text.txt' has 20*" pretrain "${MT[@]}" --tokenizer mt.json --src train.en --tgt text.txt -m "$O"; }
@test "pretrain --arch transformer: text that is no TSV" {
  row 1 "*'corpus.txt' line 1: no tab*" pretrain "${MT[@]}" --tokenizer mt.json -m "$O" corpus.txt; }
@test "pretrain --arch transformer: a binary TSV" {
  row 1 "*'binary.bin' line 2: more than one tab*" pretrain "${MT[@]}" --force --tokenizer mt.json -m "$O" binary.bin; }
@test "pretrain --arch transformer: empty input" {
  row 1 "*'empty.txt': no training pairs (0 read*" pretrain "${MT[@]}" --tokenizer mt.json -m "$O" empty.txt; }
@test "pretrain --arch transformer: invalid UTF-8 is repaired, with a warning" {
  row 0 "*badutf8.txt: 2 lines of invalid UTF-8 repaired*" pretrain "${MT[@]}" --tokenizer mt.json --src badutf8.txt --tgt badutf8.txt -m "$O"; }
@test "pretrain --arch transformer: --src without --tgt" {
  row 2 "*--src and --tgt go together*" pretrain "${MT[@]}" --tokenizer mt.json --src train.en -m "$O"; }
@test "pretrain --arch transformer: a GPT checkpoint to continue" {
  row 3 "*'gpt/latest' holds a gpt model, not transformer*" pretrain "${MT[@]}" --tokenizer mt.json --src train.en --tgt train.de --init gpt -m "$O"; }

# --- finetune

@test "finetune: empty training data" { row 1 "*'empty.txt': no examples*" finetune "${FT[@]}" --init bert -m "$O" empty.txt; }
@test "finetune: binary training data" {
  row 1 "*'binary.bin' line 2 has 3 fields but line 1 has 2*" finetune "${FT[@]}" --init bert -m "$O" binary.bin; }
@test "finetune: text that is no TSV" {
  row 1 "*'text.txt' line 1: 1 field: expected label<TAB>text*" finetune "${FT[@]}" --init bert -m "$O" text.txt; }
@test "finetune: a line with fewer fields" {
  row 1 "*'fields.tsv' line 2 has 1 field but line 1 has 2*" finetune "${FT[@]}" --init bert -m "$O" fields.tsv; }
@test "finetune: an empty label" { row 1 "*'nolabel.tsv' line 2: empty label*" finetune "${FT[@]}" --init bert -m "$O" nolabel.tsv; }
@test "finetune: an empty text" { row 1 "*'notext.tsv' line 2: empty text*" finetune "${FT[@]}" --init bert -m "$O" notext.tsv; }
@test "finetune: a CRLF line without its text" { row 1 "*'crlf.tsv' line 2*" finetune "${FT[@]}" --init bert -m "$O" crlf.tsv; }
@test "finetune: a huge line" { row 1 "*'huge.txt' line 1: 1 field*" finetune "${FT[@]}" --init bert -m "$O" huge.txt; }
@test "finetune: bad validation data" {
  row 1 "*'fields.tsv' line 2: 1 field where 2 are expected*" finetune "${FT[@]}" --init bert --valid fields.tsv -m "$O" cls.tsv; }
@test "finetune: a binary label file" { row 1 "*'binary.bin' line 1*" finetune "${FT[@]}" --init bert --labels binary.bin -m "$O" cls.tsv; }
@test "finetune: a transformer to fine-tune" {
  row 3 "*'mt' holds a transformer model: finetune trains and uses bert, gpt and llama classifiers*" finetune "${FT[@]}" --init mt -m "$O" cls.tsv; }
@test "finetune: a GPT run to fine-tune as BERT (a WordPiece tokenizer)" {
  row 3 "*'wp.json' has 600 token ids, but the model 'gpt' has a vocabulary of 400*" \
    finetune "${FT[@]}" --init gpt --tokenizer wp.json -m "$O" cls.tsv; }
@test "finetune: a BERT with a BPE tokenizer" {
  row 3 "*'tok.json': the tokenizer has no '[[]CLS]' token*" finetune "${FT[@]}" --init bert --tokenizer tok.json -m "$O" cls.tsv; }
@test "finetune: a classifier to fine-tune again" {
  row 3 "*'cls' is a classifier already (2 labels)*" finetune "${FT[@]}" --init cls -m "$O" cls.tsv; }
@test "finetune: a tokenizer where a model is expected" {
  row 3 "*'tok.json': not a safetensors file (it looks like JSON*" finetune "${FT[@]}" --init tok.json -m "$O" cls.tsv; }
@test "finetune: a truncated model" {
  row 3 "*'trunc-model.safetensors': truncated safetensors file*" finetune "${FT[@]}" --init trunc-model.safetensors -m "$O" cls.tsv; }
@test "finetune: a pretrain run to resume" {
  row 3 "*'gpt' is a checkpoint of pretrain, not of finetune: fine-tune its model with --init*" \
    finetune "${FT[@]}" --resume gpt -m "$O" cls.tsv; }
@test "finetune: a file to resume" { row 3 "*'empty.txt' is not a checkpoint to resume*" finetune "${FT[@]}" --resume empty.txt -m "$O" cls.tsv; }
@test "finetune: a log on a full disk" {
  row 1 "*cannot write log '/dev/full': No space left on device*" finetune "${FT[@]}" --init bert --log /dev/full -m "$O" cls.tsv; }
@test "finetune: no --init" { row 2 "*give --init MODEL*" finetune "${FT[@]}" -m "$O" cls.tsv; }
@test "finetune predict: --init" { row 2 "*are for training*" finetune predict --init bert -m cls text.txt; }
@test "finetune eval: no file" { row 2 "*eval needs a labelled FILE*" finetune eval -m cls; }
@test "finetune predict: a pretrained model without a head" {
  row 3 "*'gpt/latest' has no classification head*" finetune predict -m gpt text.txt; }
@test "finetune predict: a transformer" { row 3 "*'mt/latest' holds a transformer model*" finetune predict -m mt text.txt; }
@test "finetune predict: a tokenizer where a model is expected" {
  row 3 "*'tok.json': not a safetensors file*" finetune predict -m tok.json text.txt; }
@test "finetune predict: binary input" { row 1 "*'binary.bin' line 2 has 3 fields but line 1 has 2*" finetune predict -m cls binary.bin; }
@test "finetune predict: invalid UTF-8 is repaired, with a warning" {
  row 0 "*'badutf8.txt': 1 fields of invalid UTF-8 repaired*" finetune predict -m cls badutf8.txt; }
@test "finetune predict: empty input" { row 0 "" finetune predict -m cls empty.txt; }
@test "finetune predict: a labelled file given to a model of single texts (it would read pairs)" {
  row 1 "*'cls.tsv' has lines of two fields ('text_a<TAB>text_b'), but 'cls' was fine-tuned on single texts: is it a labelled file? 'finetune eval' scores one*" \
    finetune predict -m cls cls.tsv; }
@test "finetune eval: pairs given to a model of single texts" {
  row 1 "*'labpair.tsv' has lines of 'label<TAB>text_a<TAB>text_b', but 'cls' was fine-tuned on single texts ('label<TAB>text')*" \
    finetune eval -m cls labpair.tsv; }
@test "finetune eval: unlabelled text" { row 1 "*'text.txt' line 1: 1 field*" finetune eval -m cls text.txt; }
@test "finetune predict: standard output on a full disk" {
  [ -w /dev/full ] || skip "no /dev/full"
  row 1 "*cannot write*No space left on device*" bash -c 'finetune predict -m cls text.txt >/dev/full'; }

# --- translate

@test "translate: a GPT checkpoint" { row 3 "*'gpt/latest' holds a gpt model, not transformer*" translate -m gpt text.txt; }
@test "translate: a BERT checkpoint" { row 3 "*'bert/latest' holds a bert model, not transformer*" translate -m bert text.txt; }
@test "translate: a tokenizer where a model is expected" {
  row 3 "*'tok.json': not a safetensors file (it looks like JSON*" translate -m tok.json text.txt; }
@test "translate: a binary model" { row 3 "*'binary.bin': not a safetensors file*byte 0*" translate -m binary.bin text.txt; }
@test "translate: an empty model" { row 3 "*'empty.txt': not a safetensors file*0 bytes*" translate -m empty.txt text.txt; }
@test "translate: a truncated model" { row 3 "*'trunc-model.safetensors': truncated safetensors file*" translate -m trunc-model.safetensors text.txt; }
@test "translate: a tokenizer of another model" {
  row 3 "*'tok.json'*" translate -m mt --tokenizer tok.json text.txt; }
@test "translate: binary input is repaired, with a warning naming the line" {
  row 0 "*'binary.bin' line 1: invalid UTF-8 replaced by U+FFFD*" translate -m mt -b 1 --max-length 2 binary.bin; }
@test "translate: invalid UTF-8 is repaired, with a warning naming the line" {
  row 0 "*'badutf8.txt' line 3: invalid UTF-8 replaced by U+FFFD*" translate -m mt -b 1 --max-length 2 badutf8.txt; }
@test "translate: a huge line is cut to the model's positions, with a warning" {
  row 0 "*'huge.txt' line 1: * tokens, more than the model's 64 positions*" translate -m mt -b 1 --max-length 2 huge.txt; }
@test "translate: empty input is empty output" { row 0 "" translate -m mt empty.txt; [ -z "$output" ]; }
@test "translate: an id outside the vocabulary" {
  row 1 "*line 1: id 99999 is not below the model's source vocabulary size 500*" bash -c 'echo "1 2 99999" | translate -m mt --input-format id'; }
@test "translate: a word where ids are expected (the message shows the word only: a line is not NUL-terminated)" {
  row 1 "translate: 'standard input' line 1: 'zz' is not a token id" bash -c 'echo "1 zz" | translate -m mt --input-format id'
  row 1 "translate: 'standard input' line 2: 'zz' is not a token id" bash -c 'printf "1 2\n3 zz" | translate -m mt --input-format id'; }
@test "translate: attention on a full disk" {
  row 1 "*cannot write '/dev/full': No space left on device*" translate -m mt -b 1 --max-length 2 --attention /dev/full text.txt; }
@test "translate: standard output on a full disk" {
  [ -w /dev/full ] || skip "no /dev/full"
  row 1 "*No space left on device*" bash -c 'translate -m mt -b 1 --max-length 2 text.txt >/dev/full'; }
@test "translate: a missing input" { row 1 "*cannot open 'nosuch.txt': No such file or directory*" translate -m mt nosuch.txt; }
@test "translate: more n-best than beams" { row 2 "*--n-best 5: at most --beam-size (2)*" translate -m mt --n-best 5 -b 2 text.txt; }

# --- one exit rule for the files a tool works with (bin/common cli_fail_file, mio_no_tokenizer):
# a model, checkpoint, run directory or tokenizer that is missing, unreadable or
# bad is 3 (the conventions' "unreadable ... model, tokenizer or config file", as
# a missing -c file is); a tokenizer needed but neither given nor beside the
# model is a usage error (2); data files stay 1 (the rows above)

@test "a missing model: generate" { row 3 "*cannot open 'nosuch': No such file or directory*" generate -m nosuch -p hi; }
@test "a missing model: translate" { row 3 "*cannot open 'nosuch': No such file or directory*" translate -m nosuch text.txt; }
@test "a missing model: finetune predict" {
  row 3 "*cannot open 'nosuch': No such file or directory*" finetune predict -m nosuch text.txt; }
@test "a missing model: finetune eval" { row 3 "*cannot open 'nosuch': No such file or directory*" finetune eval -m nosuch cls.tsv; }
@test "a missing model: pretrain --init" {
  row 3 "*cannot open 'nosuch': No such file or directory*" pretrain "${GPT[@]}" --init nosuch -m "$O" train.bin; }
@test "a missing model: finetune --init" { row 3 "*cannot open 'nosuch': No such file or directory*" finetune "${FT[@]}" --init nosuch -m "$O" cls.tsv; }
@test "a missing run: finetune --resume" {
  row 3 "*cannot open 'nosuch': No such file or directory*" finetune "${FT[@]}" --resume nosuch -m "$O" cls.tsv; }
@test "a directory without a model: generate" { row 3 "*cannot open 'nomodel/model.safetensors'*" generate -m nomodel -p hi; }
@test "a directory without a model: pretrain --init" {
  row 3 "*cannot open 'nomodel/model.safetensors'*" pretrain "${GPT[@]}" --init nomodel -m "$O" train.bin; }
@test "a missing tokenizer: tokenize" { row 3 "*cannot open 'nosuch.json': No such file or directory*" tokenize -m nosuch.json -o "$O" text.txt; }
@test "a missing tokenizer: pretrain --tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" pretrain "${GPT[@]}" --tokenizer nosuch.json -m "$O" corpus.txt; }
@test "a missing tokenizer: pretrain --src-tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" \
    pretrain "${MT[@]}" --src-tokenizer nosuch.json --tgt-tokenizer mt.json --src train.en --tgt train.de -m "$O"; }
@test "a missing tokenizer: generate --tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" generate -m gpt --tokenizer nosuch.json -p hi; }
@test "a missing tokenizer: translate --tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" translate -m mt --tokenizer nosuch.json text.txt; }
@test "a missing tokenizer: finetune --tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" finetune "${FT[@]}" --init bert --tokenizer nosuch.json -m "$O" cls.tsv; }
@test "a missing tokenizer: finetune predict --tokenizer" {
  row 3 "*cannot open 'nosuch.json': No such file or directory*" finetune predict -m cls --tokenizer nosuch.json text.txt; }
@test "no --tokenizer: pretrain on text" {
  row 2 "*'corpus.txt' is text, not a token stream: give a tokenizer for text input*" pretrain "${GPT[@]}" -m "$O" corpus.txt; }
@test "no --tokenizer: pretrain on text from standard input" {
  row 2 "*'-' is text, not a token stream: give a tokenizer for text input*" bash -c 'pretrain "$@" - <corpus.txt' _ "${GPT[@]}" -m "$O"; }
@test "no --tokenizer: pretrain --arch transformer" {
  row 2 "*the transformer reads text: give --tokenizer*" pretrain "${MT[@]}" --src train.en --tgt train.de -m "$O"; }
@test "no --tokenizer: generate with a model that has none" {
  row 2 "*'gpt-notok' has no tokenizer beside it (*): give --tokenizer, or use --input-format id --output-format id*" \
    generate -m gpt-notok -p hi; }
@test "no --tokenizer: generate --perplexity of text with a model that has none" {
  row 2 "*'text.txt' is text, not a token stream: give a tokenizer for text input*" generate -m gpt-notok --perplexity text.txt; }
@test "no --tokenizer: translate with a model that has none" {
  row 2 "*'mt-notok' has no source tokenizer beside it (tokenizer.json): give --tokenizer, or use --input-format id*" \
    translate -m mt-notok text.txt; }
@test "no --tokenizer: finetune --init with a model that has none" {
  row 2 "*'gpt-notok' has no tokenizer beside it (*): give --tokenizer*" finetune "${FT[@]}" --init gpt-notok -m "$O" cls.tsv; }

# --- generate

@test "generate: a BERT checkpoint" { row 3 "*'bert/latest' holds a bert model, not gpt*" generate -m bert -p hi; }
@test "generate: a transformer" { row 3 "*'mt/latest' holds a transformer model, not gpt*" generate -m mt -p hi; }
@test "generate: a tokenizer where a model is expected" {
  row 3 "*'tok.json': not a safetensors file (it looks like JSON*" generate -m tok.json -p hi; }
@test "generate: an empty model" { row 3 "*'empty.txt': not a safetensors file*" generate -m empty.txt -p hi; }
@test "generate: a truncated model" { row 3 "*'trunc-model.safetensors': truncated safetensors file*" generate -m trunc-model.safetensors -p hi; }
@test "generate: a WordPiece tokenizer of another vocabulary" {
  row 3 "*'wp.json' has 600 token ids, but the model 'gpt' has a vocabulary of 400*" generate -m gpt --tokenizer wp.json -p hi; }
@test "generate: a binary tokenizer" { row 3 "*'binary.bin' byte 0: invalid UTF-8*" generate -m gpt --tokenizer binary.bin -p hi; }
@test "generate: an id outside the vocabulary" { row 1 "*id 99999 is not below the model's vocabulary size 400*" generate -m gpt --input-format id -p "1 2 99999"; }
@test "generate: a word where ids are expected" { row 1 "*'x' is not a token id*" generate -m gpt --input-format id -p "1 x 2"; }
@test "generate: a prompt longer than the context" {
  row 1 "*'huge.txt': the prompt has * tokens; the model's context is 64*" generate -m gpt -n 1 huge.txt; }
@test "generate --batch: binary prompts" {
  row 1 "*'binary.bin' line 1: invalid UTF-8 replaced*'binary.bin' line 1: the prompt has*" generate -m gpt --batch -n 1 binary.bin; }
@test "generate --perplexity: empty input" { row 1 "*'empty.txt' holds 0 tokens: nothing to score*" generate -m gpt --perplexity empty.txt; }
@test "generate --perplexity: invalid UTF-8 is repaired, with a warning" {
  row 0 "*1 line of invalid UTF-8 repaired*" generate -m gpt --perplexity badutf8.txt; }
@test "generate --perplexity: a truncated token stream" {
  row 3 "*'trunc.bin': truncated token stream header (20 of 32 bytes)*" generate -m gpt --perplexity trunc.bin; }
@test "generate --perplexity: a token stream of another version" {
  row 3 "*'v9.bin': token stream version 9 is not supported*" generate -m gpt --perplexity v9.bin; }
@test "generate: beam search with sampling options" { row 2 "*--beam-size searches; it does not sample*" generate -m gpt --beam-size 2 --temperature 0.5 -p hi; }
@test "generate: -p and a file" { row 2 "*-p and input files exclude each other*" generate -m gpt -p hi text.txt; }
@test "generate: standard output on a full disk" {
  [ -w /dev/full ] || skip "no /dev/full"
  row 1 "*No space left on device*" bash -c 'generate -m gpt -n 4 -p hi >/dev/full'; }
