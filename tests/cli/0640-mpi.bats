#!/usr/bin/env bats
# Data-parallel training under mpirun: 2 ranks of 1 thread each against one
# process of 1 thread on the same global batches (gpt, bert, the transformer,
# finetune), rank 0 alone writing, resume at the same and another number of
# ranks, a rank that hangs or dies, and misuse. Tiny models on the bundled
# sentences. Skipped where mpirun is missing or the tools were built with
# MPI=0 (make passes NLPIPE_MPI).

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  command -v mpirun >/dev/null && [ "${NLPIPE_MPI:-1}" != 0 ] || return 0
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -q -o "$W/gpt.json" "$D/src.en"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -q -o "$W/mt.json" \
    "$D/src.en" "$D/tgt.de"
  "$NLPIPE_BIN/train-wordpiece" --vocab-size 600 -q -o "$W/wp.json" "$D/src.en" "$D/tgt.de"
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >"$W/docs.txt"
  head -150 "$D/src.en" >"$W/train.en"
  head -150 "$D/tgt.de" >"$W/train.de"
  tail -50 "$D/src.en" >"$W/valid.en"
  tail -50 "$D/tgt.de" >"$W/valid.de"
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >"$W/lang.tsv"
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>"$W/lang.tsv"
  awk 'NR % 5 == 0' "$W/lang.tsv" >"$W/cls-dev.tsv"
  awk 'NR % 5 != 0' "$W/lang.tsv" >"$W/cls-train.tsv"
  "$NLPIPE_BIN/pretrain" --arch bert --preset tiny -t 1 -q --tokenizer "$W/wp.json" --steps 20 -B 8 --max-length 48 \
    --lr 1e-3 --warmup 5 -m "$W/bert" "$W/docs.txt"
  # multiple choice (4 rows an example) and SQuAD JSON for finetune's other tasks
  python3 - "$D" "$W" <<'PY'
import json, random, re, sys
d, w = sys.argv[1], sys.argv[2]
r = random.Random(1)
en = [l.rstrip('\n') for l in open(d + '/src.en', encoding='utf-8')][:60]
de = [l.rstrip('\n') for l in open(d + '/tgt.de', encoding='utf-8')][:60]
rows = []
for i, s in enumerate(en):
    wrong = r.sample([x for j, x in enumerate(en) if j != i], 3)
    k = r.randrange(4)
    rows.append('\t'.join([str(k), s] + wrong[:k] + [de[i]] + wrong[k:]))
open(w + '/choice.tsv', 'w', encoding='utf-8').write('\n'.join(rows) + '\n')
paras = []
for i, s in enumerate(de[:30]):
    m = list(re.finditer(r"\w+", s))
    paras.append({"context": s, "qas": [{"id": "%s%d" % (k, i), "question": k + " word", "answers": [{"text": x.group(),
                  "answer_start": x.start()}]} for k, x in (("first", m[0]), ("last", m[-1]))]})
json.dump({"version": "1.1", "data": [{"title": "de", "paragraphs": paras}]}, open(w + '/qa.json', 'w', encoding='utf-8'),
          ensure_ascii=False)
PY
}

setup() {
  command -v mpirun >/dev/null || skip "mpirun not found (tools/install-deps installs openmpi-bin)"
  [ "${NLPIPE_MPI:-1}" != 0 ] || skip "built with MPI=0"
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  GPT=(--preset tiny -t 1 -q --tokenizer "$W/gpt.json" -B 4 --max-length 32 --lr 3e-3 --warmup 5 --dropout 0.1)
}

# mpirun with N ranks on this machine; small gradient buckets so that the
# summing overlaps the backward pass even for the tiny models
mpi() {
  local n="$1"; shift
  NLPIPE_MPI_BUCKET=4096 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
    -x NLPIPE_MPI_BUCKET -x ASAN_OPTIONS -x UBSAN_OPTIONS -x NLPIPE_MPI_TIMEOUT "$@"
}
export -f mpi # run_split runs it in a new shell

# two logs agree: the same steps and token counts, and every figure (loss,
# grad norm, validation) within tol relative to its size. The ranks' sums
# of fp32 gradients round differently from one process's; Adam carries the
# differences on (1e-6 after a few steps, 1e-4 after tens), while a wrong
# mask or a gradient summed too early is off by 1e-2 at once.
same_run() {
  awk -F'\t' -v tol="${3:-1e-3}" '
    NR == FNR { a[FNR] = $0; n = FNR; next }
    { split(a[FNR], x, "\t")
      if (x[1] != $1 || x[2] != $2) { print "line " FNR ": step/tokens " x[1] "/" x[2] " vs " $1 "/" $2; bad = 1; next }
      for (k = 4; k <= NF; k++) {
        if (k == 3 || k == 7) continue
        if ((x[k] == "") != ($k == "")) { print "line " FNR " column " k ": " x[k] " vs " $k; bad = 1; continue }
        if ($k == "" || FNR == 1) continue
        d = x[k] - $k; if (d < 0) d = -d
        s = x[k] < 0 ? -x[k] : x[k]; if (s < 1) s = 1
        if (d > tol * s) { print "line " FNR " column " k ": " x[k] " vs " $k; bad = 1 }
      }
    }
    END { if (FNR != n) { print FNR " lines vs " n; bad = 1 }; exit bad }' "$1" "$2"
}

@test "mpirun -np 2 pretrain (gpt) matches one process over 50 steps, and rank 0 alone writes" {
  args=("${GPT[@]}" --steps 50 --save-every 25 --eval-every 10 --valid "$W/valid.en" "$D/src.en")
  run_split pretrain "${args[@]}" -m "$T/one" --log "$T/one.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 2 pretrain "${args[@]}" -m "$T/two" --log "$T/two.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(wc -l <"$T/two.tsv")" -eq 51 ]
  same_run "$T/one.tsv" "$T/two.tsv"
  # the checkpoints say how many ranks trained them; nothing else was written
  grep -aq '"ranks":"2"' "$T/two/step-00000050/train_state.safetensors"
  grep -aq '"ranks":"1"' "$T/one/step-00000050/train_state.safetensors"
  [ "$(ls "$T/two")" = "$(ls "$T/one")" ]
  [ -z "$(ls -A "$T/two" | grep '^\.')" ]
}

@test "mpirun -np 2 pretrain: without -q, one rank reports" {
  # -q swapped for -v element by element: "${GPT[@]/-q/-v}" would also
  # rewrite a temporary directory named bats-run-q... inside a path
  local v=() a
  for a in "${GPT[@]}"; do [ "$a" = -q ] && a=-v; v+=("$a"); done
  run_split mpi 2 pretrain "${v[@]}" --steps 4 --log-every 1 -m "$T/r" "$D/src.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(grep -c 'step 4/4 loss' <<<"$stderr")" -eq 1 ]
  ! grep -q 'rank 1' <<<"$stderr"
}

@test "mpirun -np 2 pretrain --arch bert and --arch transformer match one process" {
  bert=(--arch bert --preset tiny -t 1 -q --tokenizer "$W/wp.json" --steps 20 -B 8 --max-length 48 --lr 1e-3
    --warmup 5 --eval-every 10 --valid "$D/tgt.de" "$W/docs.txt")
  run_split pretrain "${bert[@]}" -m "$T/b1" --log "$T/b1.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 2 pretrain "${bert[@]}" -m "$T/b2" --log "$T/b2.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/b1.tsv" "$T/b2.tsv"
  mt=(--arch transformer --preset tiny -t 1 -q --tokenizer "$W/mt.json" --schedule inverse-sqrt --lr 3e-3 --warmup 5
    --batch-tokens 600 --steps 30 --eval-every 15 --valid-bleu 20 --src "$W/train.en" --tgt "$W/train.de"
    --valid-src "$W/valid.en" --valid-tgt "$W/valid.de")
  run_split pretrain "${mt[@]}" -m "$T/t1" --log "$T/t1.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 2 pretrain "${mt[@]}" -m "$T/t2" --log "$T/t2.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/t1.tsv" "$T/t2.tsv"
}

@test "mpirun -np 2 finetune matches one process; eval and predict stay single" {
  ft=(--init "$W/bert" --valid "$W/cls-dev.tsv" --epochs 2 -t 1 -q -B 16 --max-length 48 --lr 2e-3 --warmup 4
    --dropout 0.1 "$W/cls-train.tsv")
  run_split finetune "${ft[@]}" -m "$T/c1" --log "$T/c1.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 2 finetune "${ft[@]}" -m "$T/c2" --log "$T/c2.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/c1.tsv" "$T/c2.tsv"
  # 3 ranks on batches of 53 rows: an epoch of 320 examples ends with a batch of 2, one rank has none
  run_split finetune "${ft[@]}" -B 53 -m "$T/c4" --log "$T/c4.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 3 finetune "${ft[@]}" -B 53 -m "$T/c3" --log "$T/c3.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/c4.tsv" "$T/c3.tsv"
  run_split mpi 2 finetune eval -m "$T/c2" -q "$W/cls-dev.tsv"
  [ "$status" -eq 2 ]
  grep -q 'eval runs in one process' <<<"$stderr"
}

@test "mpirun -np 3 finetune choice and span match one process (a choice example's rows on one rank)" {
  # 60 examples of 4 rows, batches of 7 examples (28 rows) over 3 ranks: 2, 2 and 3 examples each
  ch=(--init "$W/bert" --valid "$W/choice.tsv" --epochs 2 -t 1 -q -B 7 --max-length 48 --lr 2e-3 --warmup 4
    --dropout 0.1 "$W/choice.tsv")
  run_split finetune "${ch[@]}" -m "$T/h1" --log "$T/h1.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 3 finetune "${ch[@]}" -m "$T/h3" --log "$T/h3.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/h1.tsv" "$T/h3.tsv"
  sp=(--init "$W/bert" --valid "$W/qa.json" --epochs 2 -t 1 -q -B 8 --max-length 48 --doc-stride 16 --lr 2e-3
    --warmup 4 --dropout 0.1 "$W/qa.json")
  run_split finetune "${sp[@]}" -m "$T/s1" --log "$T/s1.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split mpi 3 finetune "${sp[@]}" -m "$T/s3" --log "$T/s3.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  same_run "$T/s1.tsv" "$T/s3.tsv"
}

@test "mpirun: a run resumes at the same number of ranks exactly, and at another with a warning" {
  run_split mpi 2 pretrain "${GPT[@]}" --steps 40 --save-every 20 -m "$T/a" --log "$T/a.tsv" "$D/src.en"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  # runs b and c lost their last checkpoint: both go on from step 20
  for r in b c; do
    cp -r "$T/a" "$T/$r" && cp "$T/a.tsv" "$T/$r.tsv"
    rm -rf "$T/$r/step-00000040" && ln -sfn step-00000020 "$T/$r/latest"
    sed -i "s|$T/a|$T/$r|g" "$T/$r/step-00000020/run.yaml"
  done
  run_split mpi 2 pretrain --resume "$T/b" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(cut -f1,2,4,5,6 "$T/a.tsv")" = "$(cut -f1,2,4,5,6 "$T/b.tsv")" ]
  cmp "$T/a/step-00000040/model.safetensors" "$T/b/step-00000040/model.safetensors"
  # one process goes on from the 2-rank checkpoint, and says so (even with -q)
  run_split pretrain --resume "$T/c" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -q 'trained on 2 processes until now, it goes on with 1' <<<"$stderr"
  same_run "$T/a.tsv" "$T/c.tsv"
}

# the pid of rank $2 of a job whose run directory is $1
rank_pid() {
  local p
  for p in $(pgrep -f "pretrain.*$1"); do
    grep -qz "^OMPI_COMM_WORLD_RANK=$2\$" "/proc/$p/environ" 2>/dev/null && { echo "$p"; return; }
  done
}

@test "mpirun: a rank that hangs ends the job after NLPIPE_MPI_TIMEOUT, the checkpoints stay good" {
  NLPIPE_MPI_TIMEOUT=2 mpi 2 pretrain "${GPT[@]}" --steps 1000000 --max-time 2 --save-every 20 -m "$T/h" \
    "$D/src.en" 2>"$T/err" &
  job=$!
  while [ ! -d "$T/h/step-00000040" ]; do sleep 0.1; done
  p=$(rank_pid "$T/h" 1)
  [ -n "$p" ]
  kill -STOP "$p"
  rc=0; wait "$job" || rc=$?
  kill -CONT "$p" 2>/dev/null || true
  [ "$rc" -ne 0 ]
  grep -q 'rank 0.*waiting for the other ranks: .* made no progress in 2 s' "$T/err"
  run_split pretrain --resume "$T/h" --steps 100 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "mpirun: a rank that dies ends the job, the checkpoints stay good" {
  mpi 2 pretrain "${GPT[@]}" --steps 1000000 --max-time 2 --save-every 20 -m "$T/k" "$D/src.en" 2>"$T/err" &
  job=$!
  while [ ! -d "$T/k/step-00000040" ]; do sleep 0.1; done
  p=$(rank_pid "$T/k" 1)
  [ -n "$p" ]
  kill -KILL "$p"
  rc=0; wait "$job" || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
  run_split pretrain --resume "$T/k" --steps 100 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "mpirun: standard input cannot feed several ranks (one usage error, exit 2)" {
  run_split mpi 2 pretrain "${GPT[@]}" --steps 5 -m "$T/x" - <"$D/src.en"
  [ "$status" -eq 2 ]
  grep -q 'standard input cannot feed 2 ranks' <<<"$stderr"
  [ "$(grep -c 'standard input' <<<"$stderr")" -eq 1 ]
}
