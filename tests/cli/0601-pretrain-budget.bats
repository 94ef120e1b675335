#!/usr/bin/env bats
# pretrain --max-time: a time budget is used whole (lib/train/loop.c keys
# the decay to the training clock): a run whose first seconds share its core
# with a busy process still trains its minutes and ends at the schedule's
# floor; a run stopped halfway resumes to the end of its budget, and one that
# has used its budget trains nothing and says so; a warm-up that outlasts the
# run is warned about at the start. The assertions are on the log (the
# training minutes it reports, the last learning rate), never on speed.
# (Bit-exact resume of a time-keyed run is tests/unit/test_train_budget.c's,
# with a clock of its own.)

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  cat "$NLPIPE_TOP/tools/demo-data/ref.de" "$NLPIPE_TOP/tools/demo-data/hyp.de" >"$W/corpus.txt"
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o "$W/tok.json" "$W/corpus.txt"
  "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format bin -o "$W/train.bin" "$W/corpus.txt"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  # cosine from 3e-3 down to --min-lr 3e-4 (--lr / 10)
  TINY=(--preset tiny --max-length 32 -B 4 -t 1 --warmup 20 --lr 3e-3 --save-every 0 --no-progress)
}

# the last row's column C of a log
last() { awk -F'\t' -v c="$2" 'END { print $c }' "$1"; }

# the log ends within 2% of M minutes of training (or two of its last steps,
# on a machine so busy that a step takes longer: the run ends with the step
# the budget ends in), at the floor 3e-4, and its rate never rose after the
# warm-up
used_whole() {
  local log="$1" m="$2"
  awk -F'\t' -v m="$m" 'NR > 1 { t[++n] = $3 }
    END { for (i = (n > 20 ? n - 20 : 1) + 1; i <= n; i++) if (t[i] - t[i - 1] > step) step = t[i] - t[i - 1]
          tol = 0.02 * m; if (2 * step > tol) tol = 2 * step
          d = t[n] - m; if (d < 0) d = -d; exit !(d <= tol) }' "$log" ||
    { echo "trained $(last "$log" 3) minutes of $m"; false; }
  awk -F'\t' 'END { exit !($4 <= 3e-4 * 1.001) }' "$log" || { echo "last lr $(last "$log" 4), not the floor 3e-4"; false; }
  awk -F'\t' 'NR > 2 && $1 > 20 && $4 > prev * (1 + 1e-9) { print "step " $1 ": lr " prev " -> " $4; bad = 1 } { prev = $4 } END { exit bad }' "$log"
}

@test "pretrain --max-time: a run whose first seconds share its core with a busy process still trains its minutes and ends at --min-lr" {
  pin=()
  if taskset -c 0 true 2>/dev/null; then pin=(taskset -c 0); fi
  # a busy loop on the run's core for the first 4 s of its 12
  "${pin[@]}" timeout 4 sh -c 'while :; do :; done' &
  busy=$!
  run_split "${pin[@]}" pretrain "${TINY[@]}" --max-time 0.2 -m "$T/r" --log "$T/r.tsv" "$W/train.bin"
  wait "$busy" || true
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  used_whole "$T/r.tsv" 0.2
  [[ "$stderr" == *"done: step $(last "$T/r.tsv" 1),"* ]]
}

@test "pretrain --max-time: stopped halfway, --resume trains on to the end of the budget; resumed again, nothing is left and it says so" {
  pretrain "${TINY[@]}" -q --max-time 0.08 -m "$T/h" --log "$T/h.tsv" "$W/train.bin" 2>"$T/err" &
  pid=$!
  # stopped after a quarter of its budget (1.2 s of training), however fast the steps are
  for _ in $(seq 1000); do
    [ -f "$T/h.tsv" ] && awk -F'\t' 'NR > 1 { t = $3 } END { exit !(t + 0 >= 0.02) }' "$T/h.tsv" && break
    sleep 0.02
  done
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  [ "$rc" -eq 143 ] || { cat "$T/err"; echo "status $rc"; false; }
  stopped="$(last "$T/h.tsv" 3)"
  awk -v s="$stopped" 'BEGIN { exit !(s < 0.06) }' || skip "the run was not stopped before most of its budget was used"
  run_split pretrain --resume "$T/h" -t 1 --no-progress
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  used_whole "$T/h.tsv" 0.08
  # one row per step, none lost or repeated
  [ "$(wc -l <"$T/h.tsv")" -eq $(($(last "$T/h.tsv" 1) + 1)) ]
  cp "$T/h.tsv" "$T/before.tsv"
  run_split pretrain --resume "$T/h" -t 1 --no-progress
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"its --max-time 0.08 is used: nothing to train; give a larger --max-time to go on"* ]]
  cmp "$T/h.tsv" "$T/before.tsv"
}

@test "pretrain: a warm-up that outlasts the run is warned about at the start, with --steps and with the steps --max-time holds" {
  run_split pretrain "${TINY[@]}" --warmup 200 --steps 30 -m "$T/s" "$W/train.bin"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"the warm-up (--warmup 200) outlasts the run (30 steps): the learning rate would neither reach its peak nor decay; give a smaller --warmup"* ]]
  # before the first step's line
  [[ "$(grep -n 'warm-up' <<<"$stderr" | cut -d: -f1)" -lt "$(grep -n 'step 1/' <<<"$stderr" | cut -d: -f1)" ]]
  run_split pretrain "${TINY[@]}" --warmup 20 --steps 30 -m "$T/s2" "$W/train.bin"
  [ "$status" -eq 0 ]
  [[ "$stderr" != *"warm-up"* ]]
  run_split pretrain "${TINY[@]}" --warmup 1000000 --max-time 0.01 -m "$T/t" "$W/train.bin"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"the warm-up (--warmup 1000000) outlasts the run (about "*" steps in --max-time 0.01 at the pace so far): "* ]]
  # quiet: no warning
  run_split pretrain "${TINY[@]}" -q --tokenizer "$W/tok.json" --warmup 200 --steps 30 -m "$T/q" "$W/train.bin"
  [ -z "$stderr" ]
}
