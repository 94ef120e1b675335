#!/usr/bin/env bash
# bench: gpt_small_train_1x2 gpt_small_train_mpi2 gpt_small_train_mpi2_efficiency gpt_small_train_mpi2_wait gpt_small_train_mpi2_net10 gpt_small_train_mpi2_net100
# needs: data/lm/train.txt
#
# Data-parallel scaling on this machine: `pretrain` training GPT small (the
# small preset: L4 C256 H4, V8192, T256, B8, dropout 0) on 3 MB of the LM
# corpus for STEPS steps, once as 1 process of 2 threads (gpt_small_train_1x2)
# and once as `mpirun -np 2` ranks of 1 thread (gpt_small_train_mpi2): tokens/s
# over the steps after the first 5, the scaling efficiency (mpi2 / 1x2), and
# the share of the training time rank 0 spent waiting for the gradient sums
# (the communication the backward pass did not hide; here through shared
# memory). gpt_small_train_mpi2_net10 and _net100 say what it would take on a
# network: the bytes a ring all-reduce sends per rank, 2(N-1)/N x 4 x
# parameters, at 10 and 100 Gbit/s, as a share of a step's compute time
# (detail on stderr); below the backward pass's share (about 2/3) the
# buckets can hide it.
# Skipped (no lines) where mpirun is missing or pretrain was built with MPI=0.
set -u
B="${NLPIPE_BIN:-$(cd "$(dirname "$0")/../../bin" && pwd)}"
STEPS="${STEPS:-40}"
out() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }

command -v mpirun >/dev/null || { echo "mpi.sh: mpirun not found: skipped" >&2; exit 0; }
readelf -d "$B/pretrain" 2>/dev/null | grep -q libmpi || { echo "mpi.sh: pretrain built without MPI: skipped" >&2; exit 0; }
lm="$SHARED/data/lm/train.txt"
[ -f "$lm" ] || { echo "mpi.sh: $lm not found: skipped" >&2; exit 0; }

d="$BENCH_TMP/mpi"
mkdir -p "$d"
if [ ! -s "$d/train.bin" ]; then
  head -c 3000000 "$lm" >"$d/train.txt"
  "$B/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 8192 -q -o "$d/tok.json" "$d/train.txt" || exit 1
  "$B/tokenize" -m "$d/tok.json" --output-format bin -o "$d/train.bin" "$d/train.txt" || exit 1
fi
args=(--preset small -B 8 --max-length 256 --steps "$STEPS" --warmup 10 --lr 1e-3 --dropout 0 --save-every 0 -v)

# tokens/s from a log: tokens and minutes between step 5 and the last
speed() {
  awk -F'\t' 'NR > 1 && $1 == 5 { t0 = $2; m0 = $3 } NR > 1 { t = $2; m = $3 } END { printf "%.0f", (t - t0) / ((m - m0) * 60) }' "$1"
}

rm -rf "$d/one" "$d/two"
"$B/pretrain" "${args[@]}" -t 2 -m "$d/one" --log "$d/one.tsv" "$d/train.bin" 2>"$d/one.err" || { cat "$d/one.err" >&2; exit 1; }
mpirun --allow-run-as-root --oversubscribe --bind-to core -np 2 \
  "$B/pretrain" "${args[@]}" -t 1 -m "$d/two" --log "$d/two.tsv" "$d/train.bin" 2>"$d/two.err" ||
  { cat "$d/two.err" >&2; exit 1; }
one="$(speed "$d/one.tsv")" two="$(speed "$d/two.tsv")"
out gpt_small_train_1x2 "$one" tokens/s
out gpt_small_train_mpi2 "$two" tokens/s
out gpt_small_train_mpi2_efficiency "$(awk -v a="$one" -v b="$two" 'BEGIN { printf "%.1f", 100 * b / a }')" "%"
# "2 ranks: W s of S s of training waiting for the others"
read -r wait total < <(sed -n 's/.*ranks: \([0-9.]*\) s of \([0-9.]*\) s of training waiting.*/\1 \2/p' "$d/two.err")
out gpt_small_train_mpi2_wait "$(awk -v w="$wait" -v t="$total" 'BEGIN { printf "%.1f", 100 * w / t }')" "%time"
params="$(sed -n 's/.*gpt: \([0-9]*\) parameters.*/\1/p' "$d/two.err" | head -1)"
awk -v p="$params" -v two="$two" -v w="$wait" -v n="$STEPS" 'BEGIN {
  tok = 8 * 256; step = tok / two; bytes = 2 * (2 - 1) / 2 * 4 * p
  c10 = bytes * 8 / 10e9; c100 = bytes * 8 / 100e9
  printf "mpi.sh: %d parameters; a step of %d tokens computes for %.0f ms per rank; its ring all-reduce sends %.1f MB per rank: %.1f ms at 10 Gbit/s, %.1f ms at 100 Gbit/s; rank 0 waited %.1f ms per step here\n", p, tok, 1000 * step, bytes / 1e6, 1000 * c10, 1000 * c100, 1000 * w / n > "/dev/stderr"
  printf "gpt_small_train_mpi2_net10\t%.1f\t%%step\n", 100 * c10 / step
  printf "gpt_small_train_mpi2_net100\t%.1f\t%%step\n", 100 * c100 / step
}'
