#!/usr/bin/env bats
# Crash safety of training: pretrain (gpt, bert, transformer, its denoise
# objective) and finetune
# killed with SIGKILL at random moments, half of them while a checkpoint is
# being written (a checkpoint every step), then resumed: after every kill
# each checkpoint left behind loads (tools/ckcheck), and the run, resumed as
# often as it was killed, ends with the same bytes (model.safetensors) and
# the same log as a run never stopped. SIGINT and SIGTERM save and exit
# 130/143; a full disk is a clear error that keeps the previous checkpoint;
# nothing temporary is left behind. Tiny models on the bundled sentences.
# The kill times come from a fixed seed (KILL_SEED), so a failure replays.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cat "$D/ref.de" "$D/hyp.de" >"$W/corpus.txt"
  head -20 "$D/ref.de" >"$W/valid.txt"
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o "$W/tok.json" "$W/corpus.txt"
  "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format bin -o "$W/train.bin" "$W/corpus.txt"
  "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format bin -o "$W/valid.bin" "$W/valid.txt"
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >"$W/docs.txt"
  "$NLPIPE_BIN/train-wordpiece" -q --vocab-size 600 -o "$W/wp.json" "$D/src.en" "$D/tgt.de"
  head -160 "$D/src.en" >"$W/train.en"
  head -160 "$D/tgt.de" >"$W/train.de"
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o "$W/mt.json" \
    "$W/train.en" "$W/train.de"
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >"$W/lang.tsv"
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>"$W/lang.tsv"
  awk 'NR % 5 == 0' "$W/lang.tsv" >"$W/dev.tsv"
  awk 'NR % 5 != 0' "$W/lang.tsv" >"$W/cls.tsv"
  "$NLPIPE_BIN/pretrain" --arch bert --preset tiny -t 1 -q --tokenizer "$W/wp.json" --steps 5 -B 8 --max-length 48 \
    -m "$W/bert" "$W/docs.txt"
  # finetune's other tasks (issue 30): multiple choice (an English sentence,
  # its German translation among English ones) and SQuAD JSON (the first and
  # last word of a German sentence)
  python3 - "$D" "$W" <<'PY'
import json, random, re, sys
d, w = sys.argv[1], sys.argv[2]
r = random.Random(1)
en = [l.rstrip('\n') for l in open(d + '/src.en', encoding='utf-8')][:64]
de = [l.rstrip('\n') for l in open(d + '/tgt.de', encoding='utf-8')][:64]
rows = []
for i, s in enumerate(en):
    wrong = r.sample([x for j, x in enumerate(en) if j != i], 3)
    k = r.randrange(4)
    rows.append('\t'.join([str(k), s] + wrong[:k] + [de[i]] + wrong[k:]))
open(w + '/choice.tsv', 'w', encoding='utf-8').write('\n'.join(rows) + '\n')
paras = []
for i, s in enumerate(de[:40]):
    m = list(re.finditer(r"\w+", s))
    paras.append({"context": s, "qas": [{"id": "%s%d" % (k, i), "question": k + " word", "answers": [{"text": x.group(),
                  "answer_start": x.start()}]} for k, x in (("first", m[0]), ("last", m[-1]))]})
json.dump({"version": "1.1", "data": [{"title": "de", "paragraphs": paras}]}, open(w + '/qa.json', 'w', encoding='utf-8'),
          ensure_ascii=False)
PY
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  CK="$NLPIPE_TOOLS/ckcheck"
  GPT=(--preset tiny --max-length 32 -B 4 -t 1 --warmup 5 --lr 3e-3 -q)
  BERT=(--arch bert --preset tiny -t 1 -q --tokenizer "$W/wp.json" -B 8 --max-length 48 --lr 1e-3 --warmup 5)
  MT=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600
      --tokenizer "$W/mt.json" --src "$W/train.en" --tgt "$W/train.de")
  FT=(-t 1 -q -B 16 --max-length 48 --lr 2e-3 --warmup 4 --init "$W/bert" --valid "$W/dev.tsv")
}

# the loss columns of a log (step, tokens, lr, loss, grad_norm, valid_*), without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

# runs a command with SIGINT at its default action (a background job of a script ignores it)
with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# nothing temporary in or beside a run directory: no hidden entry, no *.tmp.*
no_temporaries() {
  local left
  left="$(find "$@" -name '.*' -o -name '*.tmp.*' | grep -v '^\.$' || true)"
  [ -z "$left" ] || { echo "left behind: $left"; false; }
}

# the step of the newest checkpoint in $K (0: none)
newest() {
  local l
  l="$("$CK" "$K" 2>/dev/null | sed -n 's/^latest step-0*//p')"
  echo "${l:-0}"
}

# kill_loop KILLS TOTAL_STEPS: runs FRESH (a new run into $K) or, once $K
# holds a checkpoint, RESUME, and kills it with SIGKILL, KILLS times. Where:
# once the checkpoint of a step 0-2 steps ahead of the newest exists (0:
# right after the start), then either a random 0-40 ms later (odd attempts)
# or as soon as the next checkpoint's hidden directory appears (even
# attempts: inside a checkpoint write). Waits poll with shell builtins
# only, so the kills keep up with a run of tiny steps. After every kill
# ckcheck must find every checkpoint loadable. Then the run is resumed to
# its end. Sets `kills` (how many landed in a running process).
kill_loop() {
  local n="$1" total="$2" i pid rc r ms at want cmd poll
  RANDOM=$((KILL_SEED + n + total))
  kills=0
  mkfifo "$T/never"
  exec {poll}<>"$T/never"  # read -t on it: a sleep without a process
  for i in $(seq "$n"); do
    at="$(newest)"
    if [ "$at" -gt 0 ]; then cmd=("${RESUME[@]}"); else cmd=("${FRESH[@]}"); fi
    r=$((RANDOM % 3)) ms=$((RANDOM % 40))
    printf -v want '%s/step-%08d' "$K" $((at + r))
    "${cmd[@]}" 2>>"$T/err" &
    pid=$!
    for _ in $(seq 20000); do
      { [ "$r" -eq 0 ] || [ -e "$want" ]; } && break
      kill -0 "$pid" 2>/dev/null || break
      read -t 0.001 -u "$poll" || true
    done
    if [ $((i % 2)) -eq 1 ]; then
      read -t "0.$(printf '%03d' "$ms")" -u "$poll" || true
    else
      for _ in $(seq 20000); do
        compgen -G "$K/.step-*" >/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        read -t 0.001 -u "$poll" || true
      done
    fi
    kill -KILL "$pid" 2>/dev/null || true
    rc=0; wait "$pid" || rc=$?
    [ "$rc" -eq 137 ] && kills=$((kills + 1))
    [ "$rc" -eq 137 ] || [ "$rc" -eq 0 ] || { echo "attempt $i: status $rc"; cat "$T/err"; false; }
    [ -d "$K" ] || continue
    run "$CK" "$K"
    [ "$status" -eq 0 ] || { echo "after kill $i (step $at + $r, $ms ms):"; echo "$output"; false; }
  done
  exec {poll}<&-
  # one last resume runs to the end
  if [ "$(newest)" -gt 0 ]; then cmd=("${RESUME[@]}"); else cmd=("${FRESH[@]}"); fi
  run_split "${cmd[@]}"
  [ "$status" -eq 0 ] || { echo "final run: $stderr"; false; }
  run "$CK" --no-stale "$K"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(readlink "$K/latest")" = "$(printf 'step-%08d' "$total")" ] || { echo "latest: $(readlink "$K/latest")"; false; }
  echo "# $kills of $n kills landed, the run resumed $n times" >&3
}

: "${KILL_SEED:=1307}"

@test "pretrain gpt: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes and log" {
  asan_skip
  args=("${GPT[@]}" --steps 24 --save-every 1 --keep 2 --valid "$W/valid.bin" --eval-every 4 "$W/train.bin")
  run_split pretrain "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(pretrain "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(pretrain --resume "$K" -t 1 -q)
  kill_loop 10 24
  cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors"
  cmp "$T/ref/best/model.safetensors" "$K/best/model.safetensors"
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ] || { diff <(losses "$T/ref.tsv") <(losses "$T/k.tsv"); false; }
  no_temporaries "$K" "$T/k.tsv"*
  [ -z "$(ls "$T" | grep -F .tmp.)" ]
}

@test "pretrain bert: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes" {
  asan_skip
  args=("${BERT[@]}" --steps 16 --save-every 1 --keep 2 "$W/docs.txt")
  run_split pretrain "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(pretrain "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(pretrain --resume "$K" -t 1 -q)
  kill_loop 8 16
  cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors"
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ]
  no_temporaries "$K"
}

@test "pretrain transformer: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes" {
  asan_skip
  args=("${MT[@]}" --steps 16 --save-every 1 --keep 3 --average 3)
  run_split pretrain "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(pretrain "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(pretrain --resume "$K" -t 1 -q)
  kill_loop 8 16
  cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors"
  cmp "$T/ref/average/model.safetensors" "$K/average/model.safetensors"
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ]
  no_temporaries "$K"
}

@test "pretrain transformer --objective denoise: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes and log" {
  asan_skip
  # the pairs are drawn afresh each epoch (11 batches): 16 steps cross into the second
  args=(--arch transformer --objective denoise --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5
        --batch-tokens 600 --tokenizer "$W/mt.json" --steps 16 --save-every 1 --keep 2 --valid "$W/docs.txt"
        --eval-every 4 "$W/docs.txt")
  run_split pretrain "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(pretrain "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(pretrain --resume "$K" -t 1 -q)
  kill_loop 6 16
  cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors"
  cmp "$T/ref/best/model.safetensors" "$K/best/model.safetensors"
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ] || { diff <(losses "$T/ref.tsv") <(losses "$T/k.tsv"); false; }
  no_temporaries "$K" "$T/k.tsv"*
}

@test "finetune: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes and predictions" {
  asan_skip
  args=("${FT[@]}" --epochs 1 --save-every 1 --keep 2 "$W/cls.tsv")
  run_split finetune "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(finetune "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(finetune --resume "$K" -t 1 -q)
  kill_loop 8 20
  cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors"
  cmp "$T/ref/best/model.safetensors" "$K/best/model.safetensors"
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ]
  cut -f2 "$W/dev.tsv" >"$T/dev.txt"
  [ "$(finetune predict -m "$T/ref" -t 1 "$T/dev.txt" 2>&1)" = "$(finetune predict -m "$K" -t 1 "$T/dev.txt" 2>&1)" ]
  no_temporaries "$K"
}

@test "finetune choice and span: SIGKILL at random moments and during checkpoint writes; resumed, the same final bytes" {
  asan_skip
  for task in choice span; do
    if [ "$task" = choice ]; then
      args=(-t 1 -q -B 16 --max-length 48 --lr 2e-3 --warmup 2 --init "$W/bert" --epochs 2 --save-every 1 --keep 2
        "$W/choice.tsv")
    else
      args=(-t 1 -q -B 16 --max-length 48 --doc-stride 16 --lr 2e-3 --warmup 2 --init "$W/bert" --epochs 1
        --save-every 1 --keep 2 "$W/qa.json")
    fi
    run_split finetune "${args[@]}" -m "$T/ref-$task" --log "$T/ref-$task.tsv"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    total=$(readlink "$T/ref-$task/latest" | sed 's/^step-0*//') # choice 2 x 4 steps, span its windows' steps
    K="$T/k-$task"
    FRESH=(finetune "${args[@]}" -m "$K" --log "$T/k-$task.tsv")
    RESUME=(finetune --resume "$K" -t 1 -q)
    kill_loop 6 "$total"
    cmp "$T/ref-$task/latest/model.safetensors" "$K/latest/model.safetensors"
    [ "$(losses "$T/ref-$task.tsv")" = "$(losses "$T/k-$task.tsv")" ]
    no_temporaries "$K"
    rm -f "$T/never" "$T/err"
  done
}

# kill_at_syscalls SYSCALL...: a run killed at the 1st, 2nd, 3rd... call of
# each SYSCALL (strace's fault injection) until one runs to its end; after
# each kill every checkpoint loads and a resumed (or fresh) run ends with the
# reference's bytes, best model and log, leaving nothing temporary. STRACE_X
# adds strace options. Sets `points`.
# the kill loops run minutes under the sanitizers and test what a SIGKILL
# leaves, which they do not see: make test runs them, make asan skips them
asan_skip() { [ -z "${NLPIPE_ASAN:-}" ] || skip "SIGKILL loops: run by make test, not under make asan"; }

kill_at_syscalls() {
  local sc n rc
  points=0
  for sc in "$@"; do
    for n in $(seq 1 200); do
      rm -rf "$K" "$T"/k.tsv*
      rc=0
      # LeakSanitizer cannot work under ptrace: off for the traced run (make asan)
      ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        strace -f -o /dev/null $STRACE_X -e trace="$sc" -e inject="$sc":signal=SIGKILL:when="$n" \
        "${FRESH[@]}" 2>"$T/err" || rc=$?
      [ "$rc" -eq 0 ] && break
      [ "$rc" -eq 137 ] || { echo "$sc #$n: status $rc"; cat "$T/err"; false; }
      points=$((points + 1))
      if [ -d "$K" ]; then
        run "$CK" "$K"
        [ "$status" -eq 0 ] || { echo "killed at $sc #$n:"; echo "$output"; false; }
      fi
      if [ "$(newest)" -gt 0 ]; then run_split "${RESUME[@]}"; else run_split "${FRESH[@]}"; fi
      [ "$status" -eq 0 ] || { echo "after $sc #$n: $stderr"; false; }
      cmp "$T/ref/latest/model.safetensors" "$K/latest/model.safetensors" || { echo "after $sc #$n"; false; }
      cmp "$T/ref/best/model.safetensors" "$K/best/model.safetensors" || { echo "after $sc #$n: best"; false; }
      [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ] || { echo "after $sc #$n: log"; false; }
      run "$CK" --no-stale "$K"
      [ "$status" -eq 0 ] || { echo "after $sc #$n:"; echo "$output"; false; }
      no_temporaries "$K" "$T"/k.tsv*
    done
  done
}

@test "pretrain: killed at every rename, link, unlink, rmdir and mkdir of a run, every checkpoint loads and the run resumes" {
  asan_skip
  command -v strace >/dev/null || skip "strace not installed"
  strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here (no ptrace)"
  args=("${GPT[@]}" --steps 3 --save-every 1 --keep 1 --valid "$W/valid.bin" --eval-every 1 "$W/train.bin")
  run_split pretrain "${args[@]}" -m "$T/ref" --log "$T/ref.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  K="$T/k"
  FRESH=(pretrain "${args[@]}" -m "$K" --log "$T/k.tsv")
  RESUME=(pretrain --resume "$K" -t 1 -q)
  STRACE_X=
  kill_at_syscalls rename renameat2 symlink unlink rmdir mkdir
  echo "# $points kill points" >&3
  [ "$points" -gt 30 ]
  # a file system without RENAME_EXCHANGE: a checkpoint of the same step
  # is replaced by two renames (a resumed run saves again where it started)
  STRACE_X="-e inject=renameat2:error=EINVAL"
  kill_at_syscalls rename
  echo "# $points kill points without RENAME_EXCHANGE" >&3
}

@test "pretrain: what killed writers left is removed (or put back) by the next run, never what is not theirs" {
  run_split pretrain "${GPT[@]}" --steps 4 --save-every 2 --keep 0 -m "$T/r" --log "$T/r.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  dead=999999999
  cd "$T/r"
  mkdir .step-00000006.tmp.$dead && : >.step-00000006.tmp.$dead/model.safetensors   # a checkpoint being written
  ln -s step-00000004 .latest.tmp.$dead                                              # a link before its rename
  cp -r step-00000002 .step-00000002.tmp.$dead.gone && rm .step-00000002.tmp.$dead.gone/run.yaml  # half pruned
  : >"$T/r.tsv.tmp.$dead-0"                                                          # a log being truncated
  mkdir .best.tmp.$dead                                                              # a model being written
  mkdir .keep-me .step-x.tmp.12ab && : >notes.tmp.txt                                # not ours
  # the previous step-4, caught between the two renames that replace it
  mv step-00000004 .step-00000004.tmp.$dead.old
  cd "$T"
  [ ! -e r/step-00000004 ]
  # (it saves step 6 only: a step-4 at the end is the one put back)
  run_split pretrain --resume "$T/r" -t 1 -q --steps 6 --save-every 100
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(ls -A r | tr '\n' ' ')" = ".keep-me .step-x.tmp.12ab latest notes.tmp.txt step-00000002 step-00000004 step-00000006 " ] ||
    { ls -A r; false; }
  [ ! -e "$T/r.tsv.tmp.$dead-0" ]
  run "$CK" r
  [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "pretrain: a log row cut short by a crash is dropped on resume" {
  run_split pretrain "${GPT[@]}" --steps 16 --save-every 12 --keep 0 -m "$T/ref" --log "$T/ref.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  run_split pretrain "${GPT[@]}" --steps 16 --save-every 12 --keep 0 -m "$T/k" --log "$T/k.tsv" "$W/train.bin"
  [ "$status" -eq 0 ]
  # killed while writing row 13 after checkpoint 12: the row is "1", checkpoint 16 never came
  rm -rf "$T/k/step-00000016" "$T/k/latest"
  head -13 "$T/k.tsv" >"$T/cut.tsv" && printf '1' >>"$T/cut.tsv" && mv "$T/cut.tsv" "$T/k.tsv"
  run_split pretrain --resume "$T/k" -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/ref.tsv")" = "$(losses "$T/k.tsv")" ] || { diff <(losses "$T/ref.tsv") <(losses "$T/k.tsv"); false; }
}

# waits (up to 30 s) until $1 exists or process $2 is gone
wait_for() {
  local _
  for _ in $(seq 3000); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 0
    sleep 0.01
  done
}

@test "SIGINT and SIGTERM save and exit 130/143 (bert, transformer, finetune; during a checkpoint write too), and the run resumes to the same bytes" {
  for which in bert mt ft; do
    case $which in
      bert) tool=pretrain args=("${BERT[@]}" --steps 40 --save-every 2 --keep 2 "$W/docs.txt") total=40 ;;
      mt) tool=pretrain args=("${MT[@]}" --steps 40 --save-every 2 --keep 2) total=40 ;;
      ft) tool=finetune args=("${FT[@]}" --epochs 2 --save-every 2 --keep 2 "$W/cls.tsv") total=40 ;;
    esac
    rm -rf "$T/ref" "$T/k"
    run_split "$tool" "${args[@]}" -m "$T/ref"
    [ "$status" -eq 0 ] || { echo "$which: $stderr"; false; }
    for sig in INT TERM; do
      rm -rf "$T/k"
      with_sigint "$tool" "${args[@]}" -m "$T/k" 2>"$T/err" &
      pid=$!
      wait_for "$T/k/step-00000002" $pid
      # SIGTERM as soon as the next checkpoint is being written
      [ $sig = TERM ] && for _ in $(seq 3000); do compgen -G "$T/k/.step-*" >/dev/null && break; kill -0 $pid || break; sleep 0.002; done
      kill -$sig $pid
      rc=0; wait $pid || rc=$?
      want=$([ $sig = INT ] && echo 130 || echo 143)
      [ "$rc" -eq "$want" ] || { echo "$which SIG$sig: status $rc"; cat "$T/err"; false; }
      grep -q "stopped by SIG$sig at step" "$T/err" || { cat "$T/err"; false; }
      step="$(readlink "$T/k/latest" | sed 's/step-0*//')"
      [ "$step" -lt "$total" ] || skip "the machine was too slow to stop the run before its end"
      run "$CK" --no-stale "$T/k"
      [ "$status" -eq 0 ] || { echo "$which SIG$sig: $output"; false; }
      run_split "$tool" --resume "$T/k" -t 1 -q
      [ "$status" -eq 0 ] || { echo "$which: $stderr"; false; }
      cmp "$T/ref/latest/model.safetensors" "$T/k/latest/model.safetensors"
      no_temporaries "$T/k"
    done
  done
}

@test "a full disk: /dev/full as the log or the run directory is a clear error (exit 1, file named), nothing left behind" {
  [ -w /dev/full ] || skip "no /dev/full"
  mkdir "$T/d" && cd "$T/d"
  run_split pretrain "${GPT[@]}" --steps 4 -m r --log /dev/full "$W/train.bin"
  [ "$status" -eq 1 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"cannot write log '/dev/full': No space left on device"* ]] || { echo "$stderr"; false; }
  [ ! -e r ]
  run_split finetune "${FT[@]}" --epochs 1 -m f --log /dev/full "$W/cls.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot write log '/dev/full'"* ]] || { echo "$stderr"; false; }
  [ ! -e f ]
  run_split pretrain "${GPT[@]}" --steps 4 -m /dev/full "$W/train.bin"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'/dev/full' is not a directory"* ]] || { echo "$stderr"; false; }
  [ -z "$(ls -A)" ] || { ls -A; false; }
}

teardown() {
  if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then umount "$MNT"; fi
  [ -z "${BG:-}" ] || kill -KILL "$BG" 2>/dev/null || true # a background run a failed test left
}

@test "a full disk: a checkpoint that does not fit is a clear error (exit 1, file named), the previous one is kept and the run resumes" {
  [ "$(id -u)" -eq 0 ] || skip "needs root to mount a small tmpfs"
  MNT="$T/mnt"
  mkdir "$MNT"
  mount -t tmpfs -o size=2400k tmpfs "$MNT" 2>/dev/null || skip "cannot mount a tmpfs here"
  args=("${GPT[@]}" --tokenizer "$W/tok.json" --steps 6 --save-every 1 --keep 2 "$W/train.bin")
  run_split pretrain "${args[@]}" -m "$T/ref"
  [ "$status" -eq 0 ]
  # one checkpoint (1.6 MB) fits, a second one does not
  run_split pretrain "${args[@]}" -m "$MNT/r" --log "$MNT/r.tsv"
  [ "$status" -eq 1 ] || { echo "status $status: $stderr"; false; }
  [[ "$stderr" == *"checkpoint at step 2 not written (the previous ones are kept): "*"$MNT/r/"*": No space left on device"* ]] ||
    { echo "$stderr"; false; }
  [ "$(readlink "$MNT/r/latest")" = step-00000001 ]
  run "$CK" --no-stale "$MNT/r"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  no_temporaries "$MNT"
  # room again: the run goes on from step 1 to the same bytes
  mount -o remount,size=20m "$MNT"
  run_split pretrain --resume "$MNT/r" -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  cmp "$T/ref/latest/model.safetensors" "$MNT/r/latest/model.safetensors"
  no_temporaries "$MNT"
}

@test "a writer killed with SIGKILL leaves its temporary file; the next writer of the same file removes it, never a live one's" {
  cd "$T"
  printf 'low lower newest widest\n' >c.txt
  mkfifo in.fifo in2.fifo
  sleep 30 >in.fifo &
  holder=$!
  tokenize -m "$W/tok.json" -o out.txt <in.fifo &
  pid=$!
  for _ in $(seq 300); do compgen -G 'out.txt.tmp.*' >/dev/null && break; sleep 0.02; done
  kill -KILL "$pid"
  wait "$pid" || true
  kill "$holder"; wait "$holder" || true
  dead="$(ls out.txt.tmp.*)"
  [ -n "$dead" ]
  # the next writer removes it when it opens; its own temporary stays while it lives
  sleep 30 >in2.fifo &
  holder=$!
  tokenize -m "$W/tok.json" -o out.txt <in2.fifo &
  live=$!
  for _ in $(seq 300); do ls out.txt.tmp.* 2>/dev/null | grep -qvxF "$dead" && break; sleep 0.02; done
  mine="$(ls out.txt.tmp.* | grep -vxF "$dead")"
  [ -n "$mine" ]
  [ ! -e "$dead" ]
  run_split tokenize -m "$W/tok.json" -o out.txt c.txt
  [ "$status" -eq 0 ]
  [ "$(ls out.txt.tmp.*)" = "$mine" ]               # a live writer's temporary is not touched
  kill "$holder"; wait "$holder" || true
  wait "$live"
  [ -z "$(ls | grep -F .tmp.)" ]
}

# --- issue 31: the run directory's own failures

@test "31.14: EIO from fsync of the run directory fails the run (exit 1, the directory named), as a file's does" {
  command -v strace >/dev/null || skip "strace not installed"
  strace -o /dev/null true 2>/dev/null || skip "strace cannot trace here (no ptrace)"
  mkdir "$T/r"
  run_split env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -o /dev/null -P "$T/r" \
    -e trace=fsync -e inject=fsync:error=EIO pretrain "${GPT[@]}" --steps 2 -m "$T/r" "$W/train.bin"
  [ "$status" -eq 1 ] || { echo "status $status: $stderr"; false; }
  [[ "$stderr" == *"cannot sync directory '$T/r': Input/output error"* ]] || { echo "$stderr"; false; }
  # what was written loads (the checkpoint was renamed into place before the sync)
  run "$CK" "$T/r"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "31.14: a run directory that cannot be written in is refused at the start, before any training" {
  [ "$(id -u)" -eq 0 ] || skip "needs root to mount a small tmpfs"
  MNT="$T/mnt"
  mkdir "$MNT"
  mount -t tmpfs -o size=20m tmpfs "$MNT" 2>/dev/null || skip "cannot mount a tmpfs here"
  run_split pretrain "${GPT[@]}" --steps 2 -m "$MNT/r" "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  mount -o remount,ro "$MNT"
  # --log-every 1 without -q: a step taken would print a line
  run_split pretrain --resume "$MNT/r" -t 1 --steps 6 --log-every 1
  [ "$status" -eq 1 ] || { echo "status $status: $stderr"; false; }
  [[ "$stderr" == *"cannot write in run directory '$MNT/r' (its lock '$MNT/r/.lock'): Read-only file system"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" != *"step "* ]] || { echo "trained before failing: $stderr"; false; }
  run_split pretrain "${GPT[@]}" --steps 2 -m "$MNT/new" "$W/train.bin"
  [ "$status" -eq 1 ] && [[ "$stderr" == *"cannot create run directory '$MNT/new': Read-only file system"* ]] || { echo "$stderr"; false; }
}

@test "31.8: a run killed with SIGKILL leaves its lock file unlocked: the next run takes it (resume and fresh alike) and removes it" {
  pretrain "${GPT[@]}" --steps 100000 --save-every 5 -m "$T/r" "$W/train.bin" 2>/dev/null &
  pid=$! BG=$!
  for _ in $(seq 3000); do [ -e "$T/r/step-00000005" ] && break; sleep 0.01; done
  kill -KILL $pid; wait $pid || true
  [ -e "$T/r/.lock" ]
  [ "$(cat "$T/r/.lock")" = "$pid" ]
  run_split pretrain --resume "$T/r" -t 1 -q --steps "$(( $(readlink "$T/r/latest" | sed 's/step-0*//') + 1 ))"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  no_temporaries "$T/r"
}
