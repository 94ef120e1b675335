#!/usr/bin/env bats
# T5's architecture choices for pretrain --arch transformer: relative position
# bias (--positions relative), trained and decoded by translate (greedy and
# beam, any batch size), recorded with the model; with --objective span they
# learn and resume exactly; misuse named.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  head -160 "$D/src.en" >"$W/train.en"
  head -160 "$D/tgt.de" >"$W/train.de"
  tail -40 "$D/src.en" >"$W/valid.en"
  tail -40 "$D/tgt.de" >"$W/valid.de"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -q \
    -o "$W/tok.json" "$W/train.en" "$W/train.de"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  TINY=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600
    --dropout 0 --tokenizer "$W/tok.json" --src "$W/train.en" --tgt "$W/train.de")
}

@test "pretrain --positions relative: learns, records the keys; translate decodes greedy and beam at any batch size" {
  run_split pretrain "${TINY[@]}" --positions relative --relative-buckets 16 --relative-max-distance 40 --norm pre \
    --steps 40 -m "$T/r" --log "$T/r.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 41 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }' || { echo "loss $first -> $last"; false; }
  # the model's configuration (its safetensors header) holds the keys, and the tables
  hdr="$(head -c 8192 "$T/r/latest/model.safetensors" | tr -d '\0')"
  [[ "$hdr" == *'positions: relative\u000arelative-buckets: 16\u000arelative-max-distance: 40\u000a'* ]]
  [[ "$hdr" == *'"encoder.rel_bias.weight":{"dtype":"F32","shape":[16,4]'* ]]
  [[ "$hdr" == *'"decoder.rel_bias.weight":{"dtype":"F32","shape":[16,4]'* ]]
  [[ "$hdr" != *'_pos.weight'* ]]
  head -12 "$W/valid.en" >"$T/in.en"
  for b in 1 4; do
    run_split translate -m "$T/r" -b $b --max-length 30 --batch-size 1 <"$T/in.en"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    one="$output"
    [ "$(printf '%s\n' "$one" | wc -l)" -eq 12 ]
    run_split translate -m "$T/r" -b $b --max-length 30 --batch-size 16 -t 2 <"$T/in.en"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$output" = "$one" ] || { echo "beam $b: batch 16 differs from batch 1"; false; }
  done
}

@test "pretrain --norm rms --bias false --ffn gated-gelu: T5 v1.1's block learns and decodes; t5-small's shape" {
  run_split pretrain "${TINY[@]}" --positions relative --norm rms --bias false --ffn gated-gelu --d-ff 172 \
    --steps 40 -m "$T/r" --log "$T/r.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 41 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }' || { echo "loss $first -> $last"; false; }
  hdr="$(head -c 16384 "$T/r/latest/model.safetensors" | tr -d '\0')"
  [[ "$hdr" == *'norm: rms\u000abias: false\u000affn: gated-gelu\u000a'* ]]
  [[ "$hdr" == *'"decoder.layers.1.ffn.gate.weight":{"dtype":"F32","shape":[172,64]'* ]]
  [[ "$hdr" != *'.bias"'* ]]
  head -5 "$W/valid.en" >"$T/in.en"
  run_split translate -m "$T/r" -b 4 --max-length 30 <"$T/in.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(printf '%s\n' "$output" | wc -l)" -eq 5 ]
  # t5-small: HF's t5-small (60,506,624) to the parameter, less 31,628 x 512 for this 500-token vocabulary
  run_split pretrain --arch transformer --preset t5-small --dry-run --steps 1 --tokenizer "$W/tok.json" \
    --src "$W/train.en" --tgt "$W/train.de" -m "$T/x"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output$stderr" == *"parameters: 169.0 MiB (44313088 floats)"* ]]
  run_split pretrain "${TINY[@]}" --ffn gated-gelu --activation relu --steps 1 -m "$T/x"
  [ "$status" -eq 2 ]
}

@test "pretrain --objective span with T5's choices (relative, rms, no biases, gated GELU): learns, resumes exactly" {
  # span corruption (0625) on the demo's package descriptions with every T5 option at once
  head -300 "$NLPIPE_TOP/tools/demo-data/lm-train.txt" >"$T/docs.txt"
  t5=(--arch transformer --objective span --positions relative --norm rms --bias false --ffn gated-gelu --d-ff 172
    --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600 --dropout 0
    --tokenizer "$W/tok.json" --eval-every 30 --save-every 30 --valid "$NLPIPE_TOP/tools/demo-data/lm-valid.txt")
  run_split pretrain "${t5[@]}" --steps 60 -m "$T/r" --log "$T/r.tsv" "$T/docs.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # training loss down by more than a nat, validation loss down and target accuracy up at step 60 against 30
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 61 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }' || { echo "loss $first -> $last"; false; }
  v30="$(awk -F'\t' '$1 == 30 { print $8, $10 }' "$T/r.tsv")" v60="$(awk -F'\t' '$1 == 60 { print $8, $10 }' "$T/r.tsv")"
  awk -v a="$v30" -v b="$v60" 'BEGIN { split(a, x, " "); split(b, y, " "); exit !(y[1] < x[1] && y[2] > x[2]) }' ||
    { echo "validation $v30 -> $v60"; false; }
  # the sentinels' rows and the relative tables are in the model
  hdr="$(head -c 16384 "$T/r/latest/model.safetensors" | tr -d '\0')"
  [[ "$hdr" == *'"tgt_emb.weight":{"dtype":"F32","shape":[600,64]'* ]]
  [[ "$hdr" == *'"encoder.rel_bias.weight":{"dtype":"F32","shape":[32,4]'* ]]
  [[ "$hdr" == *'norm: rms\u000abias: false\u000affn: gated-gelu\u000a'* ]]
  # 30 steps (past the first epoch of about 27), then resumed to 60: the same weights and figures
  run_split pretrain "${t5[@]}" --steps 30 -m "$T/a" --log "$T/a.tsv" "$T/docs.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split pretrain --resume "$T/a" --steps 60 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  cmp "$T/r/step-00000060/model.safetensors" "$T/a/step-00000060/model.safetensors"
  [ "$(cut -f1,2,4,5,6,8- "$T/r.tsv")" = "$(cut -f1,2,4,5,6,8- "$T/a.tsv")" ]
}

@test "pretrain: relative-position keys without --positions relative, or out of range, are usage errors" {
  run_split pretrain "${TINY[@]}" --relative-buckets 16 --steps 1 -m "$T/x"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'relative-buckets' applies to relative positions (positions: relative), not sinusoidal ones"* ]]
  run_split pretrain "${TINY[@]}" --positions relative --relative-buckets 64 --relative-max-distance 20 --steps 1 -m "$T/x"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"relative-max-distance 20 must be above relative-buckets / 2 (32)"* ]]
  run_split pretrain --arch gpt --preset tiny --positions relative --steps 1 -m "$T/x" --train "$W/train.en" \
    --tokenizer "$W/tok.json"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"gpt positions are learned or rope, not relative"* ]]
  [ ! -e "$T/x" ]
}
