#!/usr/bin/env bash
# bench: gpt_small_train_bf16 gpt2_124m_train_bf16 bert_small_train_bf16 encdec_train_bf16
#
# Mixed precision: one training step of the workloads of train.sh and mt.sh
# (GPT small, GPT-2 124M, BERT small, the encoder-decoder) with `--bf16`:
# matrix products with bf16 operands and fp32 accumulation (AVX-512 BF16 or
# AMX), weights, gradients and AdamW in fp32, 2 threads. Beside each, the
# PyTorch peer under its CPU autocast (pytorch_bench.py --bf16: bf16 products
# through oneDNN, fp32 weights and optimizer), NAME_bf16@pytorch, and our own
# fp32 step measured in the same rounds, as NAME_bf16_vs_fp32 (our bf16
# tokens/s over our fp32 tokens/s: the speed-up --bf16 brings here). ROUNDS
# rounds (default 1) take turns, ours then the peer; each figure is the median
# of its rounds. On a CPU without AVX-512 BF16 the names are listed as skipped.
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/pytorch.bash"
T="${NLPIPE_TOOLS:-$(cd "$here/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
only=" ${BENCH_ONLY:-} "
want() { [ "$only" = "  " ] || case "$only" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
names="gpt_small gpt2_124m bert_small encdec"
if [ "$("$T/trainbench" kernels | sed 's/.*bf16 //')" = none ]; then
  echo "bf16.sh: this CPU has no AVX-512 BF16 (trainbench kernels): skipped" >&2
  for w in $names; do printf '%s_train_bf16\tskipped\tno AVX-512 BF16\n' $w; done
  exit 0
fi
acc="$(mktemp "${BENCH_TMP:-/tmp}/bf16.XXXXXX")"
trap 'rm -f "$acc"' EXIT
peer=0
if pytorch_ok; then peer=1
elif [ "${PEERS:-1}" != 0 ]; then
  echo "bf16.sh: the PyTorch peer needs python3-torch and ../shared (tools/install-deps --bench): skipped" >&2
fi
val() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$2"; }
one="$(mktemp "${BENCH_TMP:-/tmp}/bf16one.XXXXXX")"
trap 'rm -f "$acc" "$one"' EXIT
for r in $(bench_rounds); do
  for w in $names; do
    want ${w}_train_bf16 || continue
    "$T/trainbench" train $w -t $threads -r "$REPS" >"$one" || exit 1
    fp="$(val ${w}_train "$one")"
    "$T/trainbench" train $w -t $threads -r "$REPS" --bf16 >"$one" || exit 1
    grep -v _gflops "$one" >>"$acc"
    bf="$(val ${w}_train_bf16 "$one")"
    awk -v a="$bf" -v b="$fp" -v n="${w}_train_bf16_vs_fp32" 'BEGIN { printf "%s\t%.2f\tx\n", n, a / b }' >>"$acc"
    [ $peer = 1 ] && pytorch_peer ${w}_train_bf16 >>"$acc"
  done
done
bench_median <"$acc"
