#!/usr/bin/env bats
# pretrain --arch gpt: data from token streams and text, the run directory,
# resume bit for bit (after a removed checkpoint and after SIGINT), signals,
# non-finite losses, --keep, the TSV log and its plot, and bad input.
# A tiny model on the 100 bundled sentences: each run takes well under a second.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  cat "$NLPIPE_TOP/tools/demo-data/ref.de" "$NLPIPE_TOP/tools/demo-data/hyp.de" >"$W/corpus.txt"
  head -20 "$NLPIPE_TOP/tools/demo-data/ref.de" >"$W/valid.txt"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o "$W/tok.json" "$W/corpus.txt"
  "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format bin -o "$W/train.bin" "$W/corpus.txt"
  "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format bin -o "$W/valid.bin" "$W/valid.txt"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  # the tiny preset, short windows, one thread: fast and deterministic
  TINY=(--preset tiny --max-length 32 -B 4 -t 1 --warmup 5 --lr 3e-3 -q)
}

# runs a command with SIGINT at its default action
with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# the loss columns of a log (step, tokens, lr, loss, grad_norm, valid_*), without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

@test "pretrain: a token stream and the same text with --tokenizer train the same model" {
  run_split pretrain "${TINY[@]}" --steps 12 -m "$T/a" --log "$T/a.tsv" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split pretrain "${TINY[@]}" --steps 12 -m "$T/b" --log "$T/b.tsv" --tokenizer "$W/tok.json" "$W/corpus.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv")" ]
  [ "$(wc -l <"$T/a.tsv")" -eq 13 ]
  # from a pipe too
  run_split bash -c "cat '$W/train.bin' | pretrain ${TINY[*]} --steps 12 -m '$T/c' --log '$T/c.tsv' -"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/c.tsv")" ]
}

@test "pretrain: the loss goes down and validation reports loss, perplexity and bits per byte" {
  run_split pretrain "${TINY[@]}" --steps 60 --eval-every 30 -m "$T/r" --log "$T/r.tsv" \
    --tokenizer "$W/tok.json" --valid "$W/valid.txt" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  head -1 "$T/r.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_ppl\tvalid_bpb'
  first="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/r.tsv")"
  last="$(awk -F'\t' 'NR == 61 { print $5 }' "$T/r.tsv")"
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || { echo "loss $first -> $last"; false; }
  # validation rows at 30 and 60, ppl = exp(loss), bpb positive
  [ "$(awk -F'\t' '$8 != "" && NR > 1' "$T/r.tsv" | cut -f1 | tr '\n' ' ')" = "30 60 " ]
  awk -F'\t' 'NR > 1 && $8 != "" { d = exp($8) - $9; if (d < 0) d = -d; if (d > 1e-3 * $9 || $10 <= 0) exit 1 }' "$T/r.tsv"
  # the run directory: the final checkpoint, a latest link, the tokenizer and the options beside the weights
  [ -L "$T/r/latest" ] && [ "$(readlink "$T/r/latest")" = step-00000060 ]
  for f in model.safetensors train_state.safetensors tokenizer.json run.yaml; do [ -s "$T/r/step-00000060/$f" ]; done
  # generate scores the validation text with the same figures
  run_split generate -m "$T/r" --perplexity --max-length 32 "$W/valid.txt" -t 1
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  v="$(awk -F'\t' 'NR == 61 { print $8 }' "$T/r.tsv")"
  g="$(printf '%s' "$output" | sed -E 's/.*"loss": ([0-9.]+),.*/\1/')"
  # the same up to rounding (generate multiplies with the weights transposed for decoding)
  awk -v a="$v" -v b="$g" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5 * a) }' || { echo "$output vs $v"; false; }
}

@test "pretrain: --resume keeps the run's --log-every (run.yaml records it)" {
  run_split pretrain "${TINY[@]}" --no-progress -v --steps 10 --log-every 7 -m "$T/l" "$W/train.bin"
  [ "$status" -eq 0 ] && [[ "$stderr" == *"step 7/10 "* ]]
  grep -qx 'log-every: 7' "$T/l/latest/run.yaml"
  run_split pretrain --resume "$T/l" -t 1 --no-progress --steps 22
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"step 14/22 "* ]] && [[ "$stderr" == *"step 21/22 "* ]] && [[ "$stderr" != *"step 20/22 "* ]]
}

@test "pretrain: --resume continues the loss sequence bit for bit" {
  run_split pretrain "${TINY[@]}" --steps 40 --save-every 10 --keep 0 -m "$T/full" --log "$T/full.tsv" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split pretrain "${TINY[@]}" --steps 40 --save-every 10 --keep 0 -m "$T/cut" --log "$T/cut.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  ls "$T/cut" | grep -c '^step-' | grep -qx 4
  # as if it had died after step 20: the later checkpoints are gone
  rm -rf "$T/cut/step-00000030" "$T/cut/step-00000040" "$T/cut/latest"
  run_split pretrain --resume "$T/cut" -t 1 -v
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"resuming '$T/cut/step-00000020' at step 20"* ]]
  [ "$(losses "$T/full.tsv")" = "$(losses "$T/cut.tsv")" ]
  [ "$(wc -l <"$T/cut.tsv")" -eq 41 ]
}

@test "pretrain: SIGINT saves and exits 130, and the resumed run ends where an uninterrupted one does" {
  # a constant rate after warm-up, so that the interrupted run can end at any step
  args=("${TINY[@]}" --schedule constant --save-every 100000 "$W/train.bin")
  run_split pretrain "${args[@]}" --steps 400 -m "$T/full" --log "$T/full.tsv"
  [ "$status" -eq 0 ]
  # (a background job of a script starts with SIGINT ignored: restore it)
  with_sigint pretrain "${args[@]}" --steps 1000000 --max-time 3 -m "$T/int" --log "$T/int.tsv" 2>"$T/err" &
  pid=$!
  for _ in $(seq 600); do [ -f "$T/int.tsv" ] && [ "$(wc -l <"$T/int.tsv")" -gt 20 ] && break; sleep 0.05; done
  kill -INT $pid
  rc=0; wait $pid || rc=$?
  [ "$rc" -eq 130 ] || { cat "$T/err"; echo "status $rc"; false; }
  grep -q "stopped by SIGINT at step" "$T/err"
  step="$(readlink "$T/int/latest" | sed 's/step-0*//')"
  [ "$step" -gt 0 ]
  [ "$step" -lt 400 ] || skip "the machine was too slow to interrupt the run before step 400"
  # no temporary directory left behind
  [ -z "$(ls -A "$T/int" | grep tmp)" ]
  run_split pretrain --resume "$T/int" -t 1 --steps 400
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/full.tsv")" = "$(losses "$T/int.tsv")" ]
  cmp "$T/full/latest/model.safetensors" "$T/int/latest/model.safetensors"
}

@test "pretrain: SIGTERM saves and exits 143" {
  pretrain "${TINY[@]}" --steps 100000 --max-time 3 -m "$T/t" --log "$T/t.tsv" "$W/train.bin" 2>"$T/err" &
  pid=$!
  for _ in $(seq 600); do [ -f "$T/t.tsv" ] && [ "$(wc -l <"$T/t.tsv")" -gt 5 ] && break; sleep 0.05; done
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  [ "$rc" -eq 143 ] || { cat "$T/err"; false; }
  [ -s "$T/t/latest/model.safetensors" ]
}

@test "pretrain: --keep keeps the newest checkpoints; a stale temporary directory is removed" {
  mkdir -p "$T/k/.step-00000007.tmp.999999999"
  run_split pretrain "${TINY[@]}" --steps 25 --save-every 5 --keep 2 -m "$T/k" "$W/train.bin"
  [ "$status" -eq 0 ]
  [ "$(ls "$T/k" | tr '\n' ' ')" = "latest step-00000020 step-00000025 " ]
  [ -z "$(ls -A "$T/k" | grep tmp)" ]
}

@test "pretrain: a non-finite loss stops the run with status 1 and keeps the last good checkpoint" {
  run_split pretrain "${TINY[@]}" --steps 200 --lr 1000 --warmup 0 --grad-clip 0 --save-every 1 --keep 0 \
    -m "$T/nan" "$W/train.bin"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"is NaN"* || "$stderr" == *"is infinite"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"the last good checkpoint is kept: '$T/nan/step-"* ]]
  last="$(readlink "$T/nan/latest")"
  [ -s "$T/nan/$last/model.safetensors" ]
  run_split generate -m "$T/nan" --input-format id --output-format id -n 2 --greedy <<<"5 6"
  [ "$status" -eq 0 ]
}

@test "pretrain: options come from YAML files, flags win, --dump-config shows them" {
  printf 'steps: 7\nlr: 0.002\nmax-length: 16\n' >"$T/c.yaml"
  run_split pretrain -c "$T/c.yaml" --lr 0.004 --dump-config
  [ "$status" -eq 0 ]
  [[ "$output" == *$'\nsteps: 7\n'* && "$output" == *$'\nlr: 0.004\n'* && "$output" == *$'\nmax-length: 16\n'* ]]
  run_split pretrain -c "$T/c.yaml" --preset tiny -t 1 -q -m "$T/y" --log "$T/y.tsv" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(tail -1 "$T/y.tsv" | cut -f1)" = 7 ]
  grep -qx 'max-length: 16' "$T/y/latest/run.yaml"
}

@test "pretrain: tools/plot-log draws the log as a PNG" {
  command -v gnuplot >/dev/null || skip "gnuplot not installed"
  run_split pretrain "${TINY[@]}" --steps 20 --eval-every 10 --valid "$W/valid.bin" -m "$T/p" --log "$T/p.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  run_split "$NLPIPE_TOP/tools/plot-log" "$T/p.tsv" "$T/p.png"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(head -c 4 "$T/p.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
  run_split "$NLPIPE_TOP/tools/plot-log" -x minutes -y bpb -o "$T/q.png" "$T/p.tsv=ours"
  [ "$status" -eq 1 ]   # a stream without a tokenizer has no bits per byte
  [[ "$stderr" == *"nothing to plot"* ]]
  # --smooth: a moving average of the training loss beside the raw line; long options
  run_split "$NLPIPE_TOP/tools/plot-log" --smooth 5 --title 'a "title"' --note 'a second line' --output "$T/s.png" "$T/p.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(head -c 4 "$T/s.png" | od -An -tx1 | tr -d ' ')" = 89504e47 ]
  ! cmp -s "$T/s.png" "$T/p.png"
  run_split "$NLPIPE_TOP/tools/plot-log" --help
  [ "$status" -eq 0 ] && [[ "$output" == *"--smooth N"* ]] && [ -z "$stderr" ]
  run_split "$NLPIPE_TOP/tools/plot-log" --smooth x "$T/p.tsv" "$T/x.png"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"--smooth: a number of rows, not 'x'"* ]]
  run_split "$NLPIPE_TOP/tools/plot-log" -y bleu --smooth 5 "$T/p.tsv" "$T/x.png"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"--smooth is for the training loss"* ]]
  run_split "$NLPIPE_TOP/tools/plot-log" --smoth 5 "$T/p.tsv" "$T/x.png"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"unrecognized option '--smoth'"*"Try 'plot-log --help'"* ]]
  [ ! -e "$T/x.png" ]
}

@test "pretrain: bad data is a clear error naming the file" {
  : >"$T/empty.txt"
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" --tokenizer "$W/tok.json" "$T/empty.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"$T/empty.txt: 0 tokens, fewer than one training window of 32"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/e" ]
  printf 'Kurz.\n' >"$T/short.txt"
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" --tokenizer "$W/tok.json" "$T/short.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"fewer than one training window"* ]]
  # text without a tokenizer: the tokenizer was not given (a usage error)
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" "$W/corpus.txt"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'$W/corpus.txt' is text, not a token stream: give a tokenizer"* ]]
  # ids beyond the model's vocabulary
  run_split pretrain "${TINY[@]}" --vocab-size 100 --steps 5 -m "$T/e" "$W/train.bin"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"$W/train.bin: token "*" is id "*", not below the model's vocabulary size 100"* ]] || { echo "$stderr"; false; }
  # a truncated stream
  head -c 101 "$W/train.bin" >"$T/trunc.bin"
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" "$T/trunc.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"trunc.bin"* ]]
  [ ! -e "$T/e" ]
}

@test "pretrain: models that do not fit are refused" {
  # a tokenizer with more ids than the model it is to train
  "$NLPIPE_TOOLS/mkmodel" tiny "$T/small.safetensors" arch=gpt vocab-size=100
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" --init "$T/small.safetensors" --tokenizer "$W/tok.json" "$W/train.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'$W/tok.json' has "*" token ids, but the model '$T/small.safetensors' has a vocabulary of 100"* ]]
  # another architecture
  "$NLPIPE_TOOLS/mkmodel" tiny "$T/bert.safetensors" arch=bert
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" --init "$T/bert.safetensors" "$W/train.bin"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"holds a bert model, not gpt"* ]]
  # sizes cannot change under --init; BERT needs a WordPiece tokenizer
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/e" --init "$T/small.safetensors" --layers 3 "$W/train.bin"
  [ "$status" -eq 2 ]
  run_split pretrain --arch bert --steps 5 "$W/train.bin"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"give --tokenizer"* ]]
  run_split pretrain --steps 5
  [ "$status" -eq 2 ]
  run_split pretrain "$W/train.bin"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"give --steps N or --max-time MINUTES"* ]]
  [ ! -e "$T/e" ]
}

@test "pretrain: --init continues from a saved model" {
  run_split pretrain "${TINY[@]}" --steps 30 -m "$T/a" --log "$T/a.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  run_split pretrain "${TINY[@]}" --steps 5 -m "$T/b" --log "$T/b.tsv" --init "$T/a" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # it starts near where the first run ended, far below a fresh start
  a1="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/a.tsv")"
  b1="$(awk -F'\t' 'NR == 2 { print $5 }' "$T/b.tsv")"
  awk -v a="$a1" -v b="$b1" 'BEGIN { exit !(b < a - 0.5) }' || { echo "$a1 vs $b1"; false; }
}
