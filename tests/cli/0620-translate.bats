#!/usr/bin/env bats
# pretrain --arch transformer and translate: the parity fixtures' greedy and
# beam outputs, training on parallel text (two files or a TSV), resume bit for
# bit, the best and averaged models, translations independent of batch size
# and threads, n-best lists, scores, attention, streaming, and bad input.
# Tiny models on the 200 bundled sentence pairs: each run takes about a second.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  head -160 "$D/src.en" >"$W/train.en"
  head -160 "$D/tgt.de" >"$W/train.de"
  tail -40 "$D/src.en" >"$W/valid.en"
  tail -40 "$D/tgt.de" >"$W/valid.de"
  paste "$W/train.en" "$W/train.de" >"$W/train.tsv"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -q \
    -o "$W/tok.json" "$W/train.en" "$W/train.de"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 400 -q -o "$W/en.json" "$W/train.en"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 450 -q -o "$W/de.json" "$W/train.de"
  # one trained model the translation tests share
  "$NLPIPE_BIN/pretrain" --arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 20 \
    --batch-tokens 600 --steps 120 --eval-every 60 --dropout 0 --tokenizer "$W/tok.json" \
    --src "$W/train.en" --tgt "$W/train.de" --valid-src "$W/valid.en" --valid-tgt "$W/valid.de" -m "$W/model"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  TINY=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600)
}

with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

losses() { cut -f1,2,4,5,6,8- "$1"; }

@test "translate: the encoder-decoder fixtures' greedy and beam outputs, at any batch size and thread count" {
  need_shared
  n=0
  for d in "$SHARED"/parity/fixtures/encdec*; do
    [ -f "$d/decode/beam4.txt" ] || continue
    N="$(awk '{ print NF; exit }' "$d/decode/greedy.txt")"
    for bs in 1 3 16; do
      for t in 1 2; do
        run_split translate -m "$d" --input-format id --output-format id -b 1 --max-length "$N" --batch-size $bs -t $t \
          <"$d/decode/prompts.txt"
        [ "$status" -eq 0 ] || { echo "$stderr"; false; }
        [ "$output" = "$(cat "$d/decode/greedy.txt")" ] || { echo "$d greedy, batch $bs, $t threads"; false; }
        run_split translate -m "$d" --input-format id --output-format id -b 4 --length-penalty 0.6 --max-length "$N" \
          --batch-size $bs -t $t <"$d/decode/prompts.txt"
        [ "$status" -eq 0 ] || { echo "$stderr"; false; }
        [ "$output" = "$(cat "$d/decode/beam4.txt")" ] || { echo "$d beam, batch $bs, $t threads"; false; }
      done
    done
    n=$((n + 1))
  done
  [ "$n" -eq 3 ]
}

@test "pretrain --arch transformer: the loss goes down; validation logs loss, perplexity and BLEU; best and latest" {
  run_split pretrain "${TINY[@]}" --steps 40 --eval-every 20 --tokenizer "$W/tok.json" --src "$W/train.en" \
    --tgt "$W/train.de" --valid-src "$W/valid.en" --valid-tgt "$W/valid.de" -m "$T/r" --log "$T/r.tsv" -v
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  head -1 "$T/r.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_ppl\tvalid_bleu'
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 41 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1) }' || { echo "loss $first -> $last"; false; }
  [ "$(awk -F'\t' '$8 != "" && NR > 1' "$T/r.tsv" | cut -f1 | tr '\n' ' ')" = "20 40 " ]
  # ppl = exp(loss); BLEU a percentage
  awk -F'\t' 'NR > 1 && $8 != "" { d = exp($8) - $9; if (d < 0) d = -d; if (d > 1e-3 * $9 || $10 < 0 || $10 > 100) exit 1 }' "$T/r.tsv"
  [[ "$stderr" == *"valid loss"*"BLEU"* ]]
  [[ "$stderr" == *"160 pairs read, "*" kept"* ]]
  for f in model.safetensors train_state.safetensors tokenizer.json run.yaml; do [ -s "$T/r/step-00000040/$f" ]; done
  [ -s "$T/r/best/model.safetensors" ] && [ -s "$T/r/best/tokenizer.json" ]
  [ ! -e "$T/r/step-00000040/src-tokenizer.json" ]
  # the logged BLEU is what `translate -b 1 | bleu` gives for the same checkpoint
  bleu40="$(awk -F'\t' 'NR == 41 { print $10 }' "$T/r.tsv")"
  run_split bash -c "translate -m '$T/r/step-00000040' -b 1 -t 1 <'$W/valid.en' | bleu '$W/valid.de' -b -w 4"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  awk -v a="$bleu40" -v b="$output" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-3) }' || { echo "$bleu40 vs $output"; false; }
}

@test "pretrain --arch transformer: a TSV trains the same model as --src/--tgt" {
  run_split pretrain "${TINY[@]}" --steps 8 --tokenizer "$W/tok.json" --src "$W/train.en" --tgt "$W/train.de" \
    -m "$T/a" --log "$T/a.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split pretrain "${TINY[@]}" --steps 8 --tokenizer "$W/tok.json" "$W/train.tsv" -m "$T/b" --log "$T/b.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv")" ]
  cmp "$T/a/step-00000008/model.safetensors" "$T/b/step-00000008/model.safetensors"
}

@test "pretrain --arch transformer: a resumed run goes on with the same batches and losses across epochs" {
  # 160 pairs in batches of 600 tokens: about 20 batches an epoch, so 50 steps cross two epochs
  run_split pretrain "${TINY[@]}" --steps 50 --tokenizer "$W/tok.json" --src "$W/train.en" --tgt "$W/train.de" \
    -m "$T/full" --log "$T/full.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split pretrain "${TINY[@]}" --steps 50 --save-every 23 --keep 0 --tokenizer "$W/tok.json" --src "$W/train.en" \
    --tgt "$W/train.de" -m "$T/part" --log "$T/part.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  rm -r "$T/part/step-00000050" "$T/part/step-00000046" "$T/part/latest"
  run_split pretrain --resume "$T/part" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # the same batches in the same order, the same losses (to the log's 6 decimals)
  [ "$(losses "$T/full.tsv")" = "$(losses "$T/part.tsv")" ]
}

@test "pretrain --arch transformer: SIGINT saves, --resume finishes; --average writes a model translate reads" {
  bash -c "$(declare -f with_sigint); with_sigint '$NLPIPE_BIN/pretrain' ${TINY[*]} --steps 100000 --save-every 0 \
    --tokenizer '$W/tok.json' --src '$W/train.en' --tgt '$W/train.de' -m '$T/r'" 2>"$T/err" &
  pid=$!
  for i in $(seq 100); do [ -e "$T/r" ] && break; sleep 0.1; done
  sleep 1
  kill -INT $pid
  wait $pid && status=0 || status=$?
  [ "$status" -eq 130 ] || { cat "$T/err"; false; }
  grep -q 'stopped by SIGINT' "$T/err"
  step="$(readlink "$T/r/latest" | sed 's/step-0*//')"
  [ "$step" -gt 0 ]
  run_split pretrain --resume "$T/r" --steps $((step + 6)) --save-every 2 --keep 3 --average 3
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"average of the newest 3 checkpoints"* ]]
  [ -s "$T/r/average/model.safetensors" ] && [ -s "$T/r/average/tokenizer.json" ]
  ! cmp -s "$T/r/average/model.safetensors" "$T/r/latest/model.safetensors"
  head -5 "$W/valid.en" | translate -m "$T/r/average" -b 2 >"$T/out"
  [ "$(wc -l <"$T/out")" -eq 5 ]
}

@test "translate: one line out per line in, empty lines kept, the same at any batch size and thread count" {
  printf '%s\n' "$(head -3 "$W/valid.en")" '' "$(sed -n 4,12p "$W/valid.en")" '   ' >"$T/in.en"
  run_split translate -m "$W/model" -t 1 --batch-size 16 --scores "$T/in.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  ref="$output"
  [ "$(printf '%s\n' "$ref" | wc -l)" -eq 14 ]
  [ "$(printf '%s\n' "$ref" | sed -n 4p)" = "0.000000	" ]
  [ "$(printf '%s\n' "$ref" | sed -n 14p)" = "0.000000	" ]
  for bs in 1 3; do
    for t in 1 2; do
      run_split translate -m "$W/model" -t $t --batch-size $bs --scores <"$T/in.en"
      [ "$status" -eq 0 ] || { echo "$stderr"; false; }
      [ "$output" = "$ref" ] || { echo "batch $bs threads $t differ"; diff <(echo "$ref") <(echo "$output"); false; }
    done
  done
  # greedy too
  run_split translate -m "$W/model" -b 1 --batch-size 1 "$T/in.en"
  g1="$output"
  run_split translate -m "$W/model" -b 1 --batch-size 7 -t 2 "$T/in.en"
  [ "$output" = "$g1" ]
}

@test "translate --int8 and --bf16: the same at any batch size and thread count, mostly as fp32's" {
  head -20 "$W/valid.en" >"$T/in.en"
  run_split translate -m "$W/model" -b 1 "$T/in.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  printf '%s\n' "$output" >"$T/fp32.de"
  modes=(--int8)
  grep -qw avx512_bf16 /proc/cpuinfo && modes+=(--bf16)
  for m in "${modes[@]}"; do
    run_split translate -m "$W/model" $m -t 1 --batch-size 16 --scores "$T/in.en"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    ref="$output"
    for bs in 1 3; do
      run_split translate -m "$W/model" $m -t 2 --batch-size $bs --scores "$T/in.en"
      [ "$output" = "$ref" ] || { echo "$m: batch $bs differs"; false; }
    done
    run_split translate -m "$W/model" $m -b 1 "$T/in.en"
    same="$(printf '%s\n' "$output" | awk 'NR == FNR { a[FNR] = $0; next } a[FNR] == $0' "$T/fp32.de" - | wc -l)"
    echo "# $m: $same of 20 greedy translations as fp32's" >&3
    [ "$same" -ge 10 ]
  done
  run_split translate -m "$W/model" --int8 --bf16 "$T/in.en"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--bf16 and --int8 exclude each other"* ]]
}

@test "translate: --n-best lists, ids in and out, and the run directory's best model" {
  head -4 "$W/valid.en" >"$T/in.en"
  run_split translate -m "$W/model" -b 4 --n-best 3 "$T/in.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "${#lines[@]}" -eq 12 ]
  [ "$(printf '%s\n' "${lines[@]}" | cut -d' ' -f1 | tr '\n' ' ')" = "0 0 0 1 1 1 2 2 2 3 3 3 " ]
  printf '%s\n' "${lines[@]}" | grep -Eqv '^[0-9]+ \|\|\| .* \|\|\| -?[0-9]+\.[0-9]+$' && false
  # scores fall within each sentence, and the first is the plain translation
  printf '%s\n' "${lines[@]}" | awk -F' [|][|][|] ' '$1 == p && $3 > s + 1e-6 { exit 1 } { p = $1; s = $3 }'
  run_split translate -m "$W/model" -b 4 "$T/in.en"
  [ "${lines[0]}" = "$(printf '%s\n' "$(translate -m "$W/model" -b 4 --n-best 3 "$T/in.en")" | sed -n 1p | awk -F' [|][|][|] ' '{ print $2 }')" ]
  # ids: the tokenizer's ids with </s> appended give the same tokens as text
  tokenize -m "$W/tok.json" --output-format id "$T/in.en" | sed 's/$/ 2/' >"$T/in.ids"
  run_split translate -m "$W/model" --input-format id --output-format id "$T/in.ids"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  tokenize -m "$W/tok.json" --decode --no-special-tokens <<<"$output" >"$T/dec.txt"
  [ "$(cat "$T/dec.txt")" = "$(translate -m "$W/model" "$T/in.en")" ]
  # the run directory means its newest checkpoint; DIR/best its best validation
  [ "$(translate -m "$W/model" "$T/in.en")" = "$(translate -m "$W/model/latest" "$T/in.en")" ]
  translate -m "$W/model/best" "$T/in.en" >"$T/best.txt"
  [ "$(wc -l <"$T/best.txt")" -eq 4 ]
}

@test "translate: --attention writes each sentence's cross-attention; plot-attention draws it" {
  command -v gnuplot >/dev/null || skip "gnuplot not installed"
  head -3 "$W/valid.en" >"$T/in.en"
  run_split translate -m "$W/model" --attention "$T/att.tsv" "$T/in.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(grep -c '^sentence' "$T/att.tsv")" -eq 3 ]
  # every row of weights sums to 1
  awk -F'\t' '$1 == "sentence" { h = 1; next } $0 == "" { next } h { h = 0; next }
              { s = 0; for (i = 2; i <= NF; i++) s += $i; if (s < 0.99 || s > 1.01) exit 1 }' "$T/att.tsv"
  # columns: the source pieces and </s>
  sed -n 2p "$T/att.tsv" | awk -F'\t' '$NF != "</s>" { exit 1 }'
  run_split "$NLPIPE_TOP/tools/plot-attention" -n 1 "$T/att.tsv" "$T/att.png"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(head -c 4 "$T/att.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
  run_split "$NLPIPE_TOP/tools/plot-attention" -n 9 "$T/att.tsv" "$T/x.png"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"no sentence 9"* ]]
  # long options as the other tools take them
  run_split "$NLPIPE_TOP/tools/plot-attention" --sentence=2 --title "the third" "$T/att.tsv" "$T/y.png"
  [ "$status" -eq 0 ] && [ -s "$T/y.png" ]
  run_split "$NLPIPE_TOP/tools/plot-attention" --help
  [ "$status" -eq 0 ] && [[ "$output" == *"--sentence N"* ]] && [ -z "$stderr" ]
  run_split "$NLPIPE_TOP/tools/plot-attention" --sentense 1 "$T/att.tsv" "$T/z.png"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"unrecognized option '--sentense'"*"Try 'plot-attention --help'"* ]]
}

@test "translate: a pipe sees each translation before the input ends" {
  mkfifo "$T/in"
  translate -m "$W/model" -b 2 <"$T/in" >"$T/out" &
  pid=$!
  exec 7>"$T/in"   # (bats keeps 3 for itself)
  head -1 "$W/valid.en" >&7
  for i in $(seq 100); do [ -s "$T/out" ] && break; sleep 0.1; done
  [ "$(wc -l <"$T/out")" -eq 1 ]
  sed -n 2p "$W/valid.en" >&7
  exec 7>&-
  wait $pid
  [ "$(wc -l <"$T/out")" -eq 2 ]
}

@test "pretrain --arch transformer: separate source and target tokenizers" {
  run_split pretrain "${TINY[@]}" --steps 6 --src-tokenizer "$W/en.json" --tgt-tokenizer "$W/de.json" \
    --src "$W/train.en" --tgt "$W/train.de" -m "$T/r"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ -s "$T/r/step-00000006/src-tokenizer.json" ] && [ -s "$T/r/step-00000006/tokenizer.json" ]
  translate -m "$T/r" -b 2 --max-length 5 "$W/valid.en" >"$T/out"
  [ "$(wc -l <"$T/out")" -eq 40 ]
  # the shared tokenizer is not this model's source tokenizer
  run_split translate -m "$T/r" --src-tokenizer "$W/tok.json" "$W/valid.en"
  [ "$status" -eq 3 ] && [[ "$stderr" == *"tok.json"*"500 ids"*"source vocabulary of 400"* ]]
}

@test "pretrain --arch transformer: filtering is counted; misaligned, tab-less and empty data are clear errors" {
  { cat "$W/train.en"; printf '\n'; printf 'word %.0s' $(seq 300); printf '\n'; } >"$T/s.en"
  { cat "$W/train.de"; printf 'Hallo\n'; printf 'Wort\n'; } >"$T/s.de"
  run_split pretrain "${TINY[@]}" --steps 2 --max-length 60 --tokenizer "$W/tok.json" --src "$T/s.en" --tgt "$T/s.de" \
    -m "$T/r" -v
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"162 pairs read"* ]] && [[ "$stderr" == *"1 with an empty side"* ]]
  [[ "$stderr" == *"longer than 60 tokens"* ]]
  # line counts that differ
  head -100 "$W/train.de" >"$T/short.de"
  run_split pretrain "${TINY[@]}" --steps 2 --tokenizer "$W/tok.json" --src "$W/train.en" --tgt "$T/short.de" -m "$T/x"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"train.en' has 160 lines and '"*"short.de' has 100"* ]]
  [ ! -e "$T/x/latest" ]
  # a TSV line without a tab
  { head -3 "$W/train.tsv"; echo "no tab here"; } >"$T/bad.tsv"
  run_split pretrain "${TINY[@]}" --steps 2 --tokenizer "$W/tok.json" "$T/bad.tsv" -m "$T/x"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"bad.tsv' line 4: no tab"* ]]
  # nothing left
  : >"$T/empty"
  run_split pretrain "${TINY[@]}" --steps 2 --tokenizer "$W/tok.json" --src "$T/empty" --tgt "$T/empty" -m "$T/x"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"no training pairs"* ]]
  # options that do not go together
  run_split pretrain "${TINY[@]}" --steps 2 --tokenizer "$W/tok.json" --src "$W/train.en" -m "$T/x"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"--src and --tgt go together"* ]]
  run_split pretrain --steps 2 --tokenizer "$W/tok.json" --src "$W/train.en" --tgt "$W/train.de" -m "$T/x"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"--arch transformer"* ]]
}

@test "pretrain and translate: wrong models and tokenizers are refused with exit 3" {
  # a tokenizer without a padding token
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 300 -q -o "$T/nopad.json" "$W/train.en"
  run_split pretrain "${TINY[@]}" --steps 2 --tokenizer "$T/nopad.json" --src "$W/train.en" --tgt "$W/train.de" -m "$T/x"
  [ "$status" -eq 3 ] && [[ "$stderr" == *"nopad.json' has no padding token"*"--special-tokens"* ]]
  # a GPT model given to translate
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 300 -q -o "$T/gpt.json" "$W/train.de"
  run_split pretrain --preset tiny --max-length 16 -B 2 -t 1 -q --steps 1 --tokenizer "$T/gpt.json" -m "$T/gpt" "$W/train.de"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split translate -m "$T/gpt" "$W/valid.en"
  [ "$status" -eq 3 ] && [[ "$stderr" == *"gpt"* ]]
  # a tokenizer that is not the model's
  run_split translate -m "$W/model" --tokenizer "$T/gpt.json" "$W/valid.en"
  [ "$status" -eq 3 ] && [[ "$stderr" == *"gpt.json' is not this model's tokenizer"* ]]
  # ids outside the source vocabulary
  run_split translate -m "$W/model" --input-format id <<<"1 2 99999"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"line 1: id 99999"* ]]
  # usage
  run_split translate -m "$W/model" -b 2 --n-best 3 "$W/valid.en"
  [ "$status" -eq 2 ]
  run_split translate "$W/valid.en"
  [ "$status" -eq 2 ]
}
