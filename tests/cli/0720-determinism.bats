#!/usr/bin/env bats
# Determinism: the same command, seed and thread count give the same bytes,
# for every tool: token ids and streams, tokenizer files, scores,
# checkpoints, fine-tuned predictions, translations and sampled text. Where
# a man page says the output does not depend on the thread count, 1 and 2
# threads are compared too; where it says results depend on it (training),
# only the same count is.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/ref.de" "$D/hyp.de" >corpus.txt
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o tok.json corpus.txt
  "$NLPIPE_BIN/train-wordpiece" -q --vocab-size 600 -o wp.json "$D/src.en" "$D/tgt.de"
  head -160 "$D/src.en" >train.en
  head -160 "$D/tgt.de" >train.de
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o mt.json train.en train.de
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >docs.txt
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >cls.tsv
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>cls.tsv
  tail -20 "$D/src.en" >test.en
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
}

# same COMMAND... run twice: the same stdout (and the files named in $FILES, relative to each run's directory)
twice() {
  local a="$T/a" b="$T/b"
  rm -rf "$a" "$b" && mkdir "$a" "$b"
  (cd "$a" && "$@" >out) || { echo "run 1 failed"; false; }
  (cd "$b" && "$@" >out) || { echo "run 2 failed"; false; }
  cmp "$a/out" "$b/out"
  local f
  for f in ${FILES:-}; do
    case "$f" in
      *train_state.safetensors) same_state "$a/$f" "$b/$f" ;;
      *) cmp "$a/$f" "$b/$f" || { echo "$f differs"; false; } ;;
    esac
  done
}

# two training states are the same but for the wall-clock time the run had
# trained (data.position[2], milliseconds: what --max-time resumes from)
# and the run's id (metadata "run": random, it tells runs apart)
same_state() {
  python3 - "$1" "$2" <<'PY'
import json, re, struct, sys
def load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    s, e = h['data.position']['data_offsets']
    at = 8 + n + s + 16                      # the third u64
    b = b[:8] + re.sub(rb'"run":"[0-9a-f]{16}"', b'"run":"' + b'0' * 16 + b'"', b[8:8 + n]) + b[8 + n:]
    return b[:at] + bytes(8) + b[at + 8:]
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    sys.exit('%s differs beyond the elapsed time' % sys.argv[2])
PY
}

@test "tokenize: the same ids and stream, at 1 and 2 threads" {
  FILES=s.bin twice tokenize -m "$W/tok.json" -t 2 --output-format bin -o s.bin "$W/corpus.txt"
  FILES= twice tokenize -m "$W/wp.json" -t 2 "$W/corpus.txt"
  cmp <(tokenize -m "$W/tok.json" -t 1 "$W/corpus.txt") <(tokenize -m "$W/tok.json" -t 2 "$W/corpus.txt")
}

@test "train-bpe: the same tokenizer file, at 1 and 2 threads" {
  FILES=t.json twice train-bpe -q -t 2 --byte-level --vocab-size 400 -o t.json "$W/corpus.txt"
  train-bpe -q -t 1 --byte-level --vocab-size 400 -o "$T/t1.json" "$W/corpus.txt"
  cmp "$T/t1.json" "$T/a/t.json"
}

@test "train-wordpiece: the same vocabulary, at 1 and 2 threads" {
  FILES=v.txt twice train-wordpiece -q -t 2 --vocab-size 300 --format vocab -o v.txt "$D/src.en"
  train-wordpiece -q -t 1 --vocab-size 300 --format vocab -o "$T/v1.txt" "$D/src.en"
  cmp "$T/v1.txt" "$T/a/v.txt"
}

@test "bleu: the same scores, bootstrap intervals included (SACREBLEU_SEED)" {
  FILES= twice bleu "$D/ref.de" -i "$D/hyp.de" -m bleu chrf ter
  FILES= twice env SACREBLEU_SEED=3 bleu "$D/ref.de" -i "$D/hyp.de" --confidence --confidence-n 50
}

@test "pretrain: the same checkpoints for the same seed and threads (gpt, bert, transformer)" {
  FILES="r/latest/model.safetensors r/latest/train_state.safetensors" \
    twice pretrain --preset tiny -q -t 2 --tokenizer "$W/tok.json" --max-length 32 -B 4 --steps 8 --dropout 0.1 \
    --seed 5 -m r "$W/corpus.txt"
  FILES="r/latest/model.safetensors r/latest/train_state.safetensors" \
    twice pretrain --arch bert --preset tiny -q -t 2 --tokenizer "$W/wp.json" -B 8 --max-length 48 --steps 6 --seed 5 \
    -m r "$W/docs.txt"
  FILES="r/latest/model.safetensors r/latest/train_state.safetensors" \
    twice pretrain --arch transformer --preset tiny -q -t 2 --tokenizer "$W/mt.json" --batch-tokens 600 --steps 6 \
    --seed 5 --src "$W/train.en" --tgt "$W/train.de" -m r
  # another seed is another run
  mkdir -p "$T/c"
  pretrain --preset tiny -q -t 2 --tokenizer "$W/tok.json" --max-length 32 -B 4 --steps 8 --seed 6 -m "$T/c/r" "$W/corpus.txt"
  ! cmp -s "$T/a/r/latest/model.safetensors" "$T/c/r/latest/model.safetensors"
}

@test "finetune: the same classifier and predictions for the same seed and threads" {
  pretrain --arch bert --preset tiny -q -t 1 --tokenizer "$W/wp.json" -B 8 --max-length 48 --steps 4 -m "$T/bert" "$W/docs.txt"
  FILES="c/latest/model.safetensors" twice finetune -q -t 2 -B 16 --max-length 48 --epochs 1 --seed 3 \
    --init "$T/bert" -m c "$W/cls.tsv"
  p1="$(finetune predict -m "$T/a/c" -t 2 --all "$W/test.en")"
  p2="$(finetune predict -m "$T/b/c" -t 2 --all "$W/test.en")"
  [ -n "$p1" ] && [ "$p1" = "$p2" ]
  # prediction does not depend on the thread count (finetune.1)
  [ "$(finetune predict -m "$T/a/c" -t 1 --all "$W/test.en")" = "$p1" ]
}

@test "translate: the same translations and scores, at 1 and 2 threads" {
  pretrain --arch transformer --preset tiny -q -t 1 --tokenizer "$W/mt.json" --batch-tokens 600 --steps 30 \
    --schedule inverse-sqrt --lr 3e-3 --warmup 5 --src "$W/train.en" --tgt "$W/train.de" -m "$T/mt"
  FILES= twice translate -m "$T/mt" -t 2 -b 3 --n-best 2 "$W/test.en"
  [ "$(translate -m "$T/mt" -t 1 -b 3 --n-best 2 "$W/test.en")" = "$(cat "$T/a/out")" ]
}

@test "generate: the same sampled text for the same --seed, at 1 and 2 threads; another seed samples anew" {
  pretrain --preset tiny -q -t 1 --tokenizer "$W/tok.json" --max-length 32 -B 4 --steps 30 --lr 3e-3 -m "$T/g" "$W/corpus.txt"
  FILES= twice generate -m "$T/g" -t 2 --seed 11 -n 24 --temperature 1.2 -p "Die Datei"
  [ -n "$(cat "$T/a/out")" ]
  [ "$(generate -m "$T/g" -t 1 --seed 11 -n 24 --temperature 1.2 -p "Die Datei")" = "$(cat "$T/a/out")" ]
  [ "$(generate -m "$T/g" -t 2 --seed 12 -n 24 --temperature 1.2 -p "Die Datei")" != "$(cat "$T/a/out")" ]
  cut -c1-40 "$W/test.en" >"$T/prompts.txt"      # the model's context is 64 tokens
  FILES= twice generate -m "$T/g" -t 2 --seed 11 -n 8 --batch "$T/prompts.txt"
  FILES= twice generate -m "$T/g" -t 2 --perplexity "$W/test.en"
}
