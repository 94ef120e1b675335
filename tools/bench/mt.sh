#!/usr/bin/env bash
# bench: encdec_train encdec_beam
#
# The encoder-decoder of shared/peers/pytorch_bench.py (3+3 layers, d 256, 4
# heads, ff 1024, V 8000 shared, fp32, 2 threads):
#   encdec_train  one training step (zero grads, forward with label-smoothed
#                 loss, backward, Adam) on B 32 pairs of 64 + 64 tokens:
#                 target tokens/s
#   encdec_beam   beam 4 (length penalty 0.6) over 32 source sentences of 64
#                 tokens, 64 decode steps, KV cache and cached cross-attention,
#                 through nlp_translate (translate's path, row-invariant
#                 products): sentences/s
# and the PyTorch peer's figures for the same workloads after ours, ROUNDS
# times interleaved (default 1; the medians are printed), the peer also with
# OpenBLAS's best kernels where it does not pick them itself (pytorch.bash).
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/pytorch.bash"
T="${NLPIPE_TOOLS:-$(cd "$here/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
acc="$(mktemp "${BENCH_TMP:-/tmp}/mt.XXXXXX")"
trap 'rm -f "$acc"' EXIT
peer=0
if pytorch_ok; then peer=1
elif [ "${PEERS:-1}" != 0 ]; then
  echo "mt.sh: the PyTorch peer needs python3-torch and ../shared (tools/install-deps --bench): skipped" >&2
fi
for r in $(bench_rounds); do
  "$T/trainbench" train encdec -t $threads -r "$REPS" | grep -v _gflops >>"$acc" || exit 1
  "$T/trainbench" beam encdec -t $threads -r "$REPS" >>"$acc" || exit 1
  [ $peer = 1 ] && pytorch_peer encdec_train,encdec_beam >>"$acc"
done
bench_median <"$acc"
