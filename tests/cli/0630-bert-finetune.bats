#!/usr/bin/env bats
# pretrain --arch bert (MLM + NSP on documents of text) and finetune (BERT and
# GPT classifiers: train, predict, eval), with resume and bad input. Tiny
# models on the bundled demo sentences: each run takes a second or two.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  # documents: blocks of three sentences between blank lines
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >"$W/docs.txt"
  head -30 "$D/src.en" >"$W/valid.txt"
  "$NLPIPE_BIN/train-wordpiece" --vocab-size 600 -o "$W/wp.json" "$D/src.en" "$D/tgt.de" 2>/dev/null
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 500 -o "$W/bpe.json" "$D/src.en" 2>/dev/null
  # a learnable classification task: the label is the language of the text
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >"$W/lang.tsv"
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>"$W/lang.tsv"
  awk 'NR % 5 == 0' "$W/lang.tsv" >"$W/dev.tsv"
  awk 'NR % 5 != 0' "$W/lang.tsv" >"$W/train.tsv"
  # pairs: same (1) or different (0) language
  paste -d'\t' <(sed 's/.*/1/' "$D/src.en") "$D/src.en" <(tail -n +2 "$D/src.en"; head -1 "$D/src.en") >"$W/pair.tsv"
  paste -d'\t' <(sed 's/.*/0/' "$D/src.en") "$D/src.en" "$D/tgt.de" >>"$W/pair.tsv"
  TINY=(--preset tiny -t 1 -q)
  "$NLPIPE_BIN/pretrain" --arch bert "${TINY[@]}" --tokenizer "$W/wp.json" --steps 40 -B 8 --max-length 48 \
    --lr 1e-3 --warmup 5 -m "$W/bert" "$W/docs.txt"
  "$NLPIPE_BIN/pretrain" "${TINY[@]}" --tokenizer "$W/bpe.json" --steps 40 -B 4 --max-length 32 --lr 3e-3 \
    --warmup 5 -m "$W/gpt" "$D/src.en"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  TINY=(--preset tiny -t 1 -q)
  FT=(-t 1 -q -B 16 --max-length 48 --lr 2e-3 --warmup 4)
}

# the loss columns of a log (step, tokens, lr, loss, grad_norm, valid_*), without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

# runs a command with SIGINT at its default action
with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

@test "pretrain --arch bert: MLM and NSP learn, validation reports both, the checkpoint holds the tokenizer" {
  run_split pretrain --arch bert "${TINY[@]}" --tokenizer "$W/wp.json" --steps 60 -B 8 --max-length 48 --lr 1e-3 \
    --warmup 5 --eval-every 30 --valid "$W/valid.txt" -m "$T/r" --log "$T/r.tsv" "$W/docs.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  head -1 "$T/r.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_mlm_loss\tvalid_mlm_acc\tvalid_nsp_acc'
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 61 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }' || { echo "loss $first -> $last"; false; }
  # loss = MLM + NSP, accuracies in [0, 1], the MLM loss far below ln V (6.4) at the end
  awk -F'\t' 'NR > 1 && $8 != "" { if ($8 < $9 || $10 < 0 || $10 > 1 || $11 < 0 || $11 > 1) exit 1 }' "$T/r.tsv"
  awk -F'\t' 'NR == 61 { exit !($9 < 6.0) }' "$T/r.tsv"
  for f in model.safetensors train_state.safetensors tokenizer.json run.yaml; do [ -s "$T/r/step-00000060/$f" ]; done
  [ -d "$T/r/best" ]
  grep -q '^arch: bert$' "$T/r/step-00000060/run.yaml"
}

@test "pretrain --arch bert: a run stopped by SIGINT resumes to the same losses and weights" {
  args=(--arch bert "${TINY[@]}" --tokenizer "$W/wp.json" --steps 40 -B 8 --max-length 48 --lr 1e-3 --warmup 5
    --save-every 10 --dropout 0.1 "$W/docs.txt")
  run_split pretrain "${args[@]}" -m "$T/a" --log "$T/a.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # stop the second run after its step-20 checkpoint, then resume
  (with_sigint "$NLPIPE_BIN/pretrain" "${args[@]}" -m "$T/b" --log "$T/b.tsv" 2>/dev/null &
    p=$!; while [ ! -d "$T/b/step-00000020" ]; do sleep 0.05; done; kill -INT "$p"; rc=0; wait "$p" || rc=$?; echo "rc=$rc" >"$T/rc")
  grep -qE 'rc=(0|130)' "$T/rc"
  run_split pretrain --resume "$T/b" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv" | awk '!seen[$1]++')" ]
  cmp "$T/a/step-00000040/model.safetensors" "$T/b/step-00000040/model.safetensors"
}

@test "finetune: a BERT classifier learns, keeps its labels, predicts and evaluates" {
  run_split finetune --init "$W/bert" --valid "$W/dev.tsv" --epochs 4 "${FT[@]}" -m "$T/c" --log "$T/c.tsv" "$W/train.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  head -1 "$T/c.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_accuracy\tvalid_macro_f1'
  # one validation per epoch; the last accuracy well above chance (0.5)
  [ "$(awk -F'\t' 'NR > 1 && $8 != ""' "$T/c.tsv" | wc -l)" -eq 4 ]
  awk -F'\t' 'NR > 1 && $8 != "" { a = $9 } END { exit !(a >= 0.9) }' "$T/c.tsv" || { cat "$T/c.tsv"; false; }
  # eval: the same accuracy as the best validation, text and JSON
  run_split finetune eval -m "$T/c" -q "$W/dev.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"dev.tsv: 80 examples, accuracy"* ]]
  echo "$output" | grep -qE '^(en|de) +[0-9.]+ +[0-9.]+ +[0-9.]+ +40$'
  run_split finetune eval --json -m "$T/c" -q "$W/dev.tsv"
  [ "$status" -eq 0 ]
  python3 -c 'import json, sys; j = json.loads(sys.stdin.read()); assert j["examples"] == 80; assert set(j["labels"]) == {"en", "de"}; assert sum(map(sum, j["confusion"])) == 80' <<<"$output"
  # predict: label names and probabilities, one line per input line, from stdin or files
  run_split bash -c "cut -f2 '$W/dev.tsv' | finetune predict -q -m '$T/c'"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(echo "$output" | wc -l)" -eq 80 ]
  echo "$output" | awk -F'\t' 'NF != 2 || ($1 != "en" && $1 != "de") || $2 < 0.5 || $2 > 1 { exit 1 }'
  run_split finetune predict --all -q -m "$T/c" <(echo "Save the file")
  [ "$status" -eq 0 ]
  echo "$output" | grep -qE $'^(en|de)\t[0-9.]+\t(en|de):[0-9.]+\t(en|de):[0-9.]+$'
}

@test "finetune: eval and predict read inputs at the length the model was trained with" {
  # trained on the first 6 positions: eval must score as validation did, not at 128
  run_split finetune --init "$W/bert" --valid "$W/dev.tsv" --epochs 2 "${FT[@]/48/6}" -m "$T/c6" --log "$T/c6.tsv" "$W/train.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -aq '"input_length":"6"' "$T/c6/best/model.safetensors"
  best=$(awk -F'\t' 'NR > 1 && $9 != "" && $9 > a { a = $9 } END { print a }' "$T/c6.tsv")
  run_split finetune eval --json -m "$T/c6" -q "$W/dev.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  acc=$(sed -nE 's/.*"accuracy": *([0-9.eE+-]+).*/\1/p' <<<"$output" | head -1)
  awk -v a="$acc" -v b="$best" 'BEGIN { d = a - b; exit !(d < 1e-4 && d > -1e-4) }' || { echo "eval $acc, validation $best"; false; }
  # an explicit --max-length still wins, and a longer one is refused past the positions
  run_split finetune eval --json --max-length 48 -m "$T/c6" -q "$W/dev.tsv"
  [ "$status" -eq 0 ]
  run_split finetune eval --max-length 100000 -m "$T/c6" -q "$W/dev.tsv"
  [ "$status" -eq 2 ]
}

@test "finetune: GPT classifiers with and without the auxiliary LM loss, and text pairs" {
  run_split finetune --init "$W/gpt" --valid "$W/dev.tsv" --epochs 4 "${FT[@]}" --lm-weight 0.5 -m "$T/g" "$W/train.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split finetune eval -m "$T/g" -q "$W/dev.tsv"
  [ "$status" -eq 0 ]
  acc="$(echo "$output" | sed -n 's/.*accuracy \([0-9.]*\).*/\1/p')"
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || { echo "$output"; false; }
  # the three tokens are in the saved tokenizer, with the model's three new ids
  grep -q '"\[EXTRACT\]"' "$T/g/best/tokenizer.json"
  run_split finetune --init "$W/gpt" --epochs 1 "${FT[@]}" --lm-weight 0 -m "$T/g0" "$W/train.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # pairs: label<TAB>a<TAB>b, with BERT
  run_split finetune --init "$W/bert" --epochs 1 "${FT[@]}" --no-progress -v -m "$T/p" "$W/pair.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"done: 1 epoch, checkpoint"* ]] || { echo "$stderr"; false; }
  run_split bash -c "cut -f2,3 '$W/pair.tsv' | head -5 | finetune predict -q -m '$T/p'"
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | wc -l)" -eq 5 ]
  # the model knows it reads pairs: single texts are refused
  run_split bash -c "cut -f2 '$W/pair.tsv' | head -5 | finetune predict -q -m '$T/p'"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'-' has lines of 'text', but '$T/p' was fine-tuned on pairs ('text_a<TAB>text_b')"* ]]
}

@test "finetune: a run stopped by SIGINT resumes to the same losses" {
  args=(--init "$W/bert" --epochs 3 "${FT[@]}" --dropout 0.1 "$W/train.tsv")
  run_split finetune "${args[@]}" -m "$T/a" --log "$T/a.tsv" --keep 0
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  (with_sigint "$NLPIPE_BIN/finetune" "${args[@]}" -m "$T/b" --log "$T/b.tsv" --keep 0 2>/dev/null &
    p=$!; while [ ! -d "$T/b/step-00000020" ]; do sleep 0.05; done; kill -INT "$p"; rc=0; wait "$p" || rc=$?; echo "rc=$rc" >"$T/rc")
  grep -qE 'rc=(0|130)' "$T/rc"
  run_split finetune --resume "$T/b" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv" | awk '!seen[$1]++')" ]
  cmp "$T/a/step-00000060/model.safetensors" "$T/b/step-00000060/model.safetensors"
}

@test "finetune: bad input is a clear error naming the file and line" {
  # a dev label the training data lack
  printf 'fr\tBonjour\nen\tHello\n' >"$T/dev2.tsv"
  run_split finetune --init "$W/bert" "${FT[@]}" --valid "$T/dev2.tsv" -m "$T/x" "$W/train.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"dev2.tsv"*"'fr' (line 1)"* ]]
  # rows with the wrong number of fields
  printf 'en\tHello\nde\tHallo\tWelt\n' >"$T/bad.tsv"
  run_split finetune --init "$W/bert" "${FT[@]}" -m "$T/x" "$T/bad.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bad.tsv' line 2 has 3 fields but line 1 has 2"* ]]
  # one label: nothing to learn
  printf 'en\tHello\nen\tWorld\n' >"$T/one.tsv"
  run_split finetune --init "$W/bert" "${FT[@]}" -m "$T/x" "$T/one.tsv"
  [ "$status" -eq 1 ]
  # an encoder-decoder, a classifier, a model without a head to predict: exit 3
  mkdir "$T/mt" && cp "$W/bert/latest/tokenizer.json" "$T/mt/"
  "$NLPIPE_TOOLS/mkmodel" tiny "$T/mt/model.safetensors" arch=transformer
  run_split finetune --init "$T/mt" "${FT[@]}" -m "$T/x" "$W/train.tsv"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"transformer"* ]]
  run_split finetune predict -m "$W/bert" -q <(echo hi)
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"no classification head"* ]]
  # a vocabulary that does not match the checkpoint
  run_split finetune --init "$W/bert" --tokenizer "$W/bpe.json" "${FT[@]}" -m "$T/x" "$W/train.tsv"
  [ "$status" -eq 3 ] || [[ "$stderr" == *"[CLS]"* ]]
  # usage
  run_split finetune "${FT[@]}" "$W/train.tsv"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--init"* ]]
  run_split finetune eval -m "$W/bert"
  [ "$status" -eq 2 ]
  [ ! -e "$T/x" ]
}

# the bytes of one tensor of a safetensors file
tensor() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys, hashlib
f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n))
t = h[sys.argv[2]]; f.seek(8 + n + t['data_offsets'][0])
print(hashlib.sha256(f.read(t['data_offsets'][1] - t['data_offsets'][0])).hexdigest())
PY
}

@test "finetune --from-scratch: the pretrained model's shapes and tokenizer with fresh weights, from --seed" {
  emb=bert.embeddings.word_embeddings.weight
  pre="$(tensor "$W/bert/latest/model.safetensors" $emb)"
  # at lr 0 the weights stay where they started: the pretrained ones, or fresh ones
  for r in a:"" b:--from-scratch c:--from-scratch; do
    run_split finetune --init "$W/bert" ${r#*:} --epochs 1 --seed 3 "${FT[@]}" --lr 0 -m "$T/${r%%:*}" "$W/train.tsv"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  done
  [ "$(tensor "$T/a/latest/model.safetensors" $emb)" = "$pre" ]
  [ "$(tensor "$T/b/latest/model.safetensors" $emb)" != "$pre" ]
  [ "$(tensor "$T/b/latest/model.safetensors" $emb)" = "$(tensor "$T/c/latest/model.safetensors" $emb)" ]
  grep -qx 'from-scratch: true' "$T/b/latest/run.yaml"
  ! grep -q 'from-scratch' "$T/a/latest/run.yaml"
  run_split finetune predict -m "$T/b" --from-scratch /dev/null
  [ "$status" -eq 2 ]
}
