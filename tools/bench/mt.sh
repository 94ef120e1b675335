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
# and the PyTorch peer's figures for the same workloads right after ours.
set -u
T="${NLPIPE_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
"$T/trainbench" train encdec -t $threads -r "$REPS" | grep -v _gflops || exit 1
"$T/trainbench" beam encdec -t $threads -r "$REPS" || exit 1
if [ "${PEERS:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null && [ -r "$SHARED/peers/pytorch_bench.py" ]; then
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SHARED/peers/pytorch_bench.py" --only encdec_train,encdec_beam \
    --threads $threads --reps "$REPS" 2>/dev/null |
    awk '$1 == "encdec_train" || $1 == "encdec_beam" {
      printf "%s@pytorch\t%s\t%s\n", $1, $2, $1 == "encdec_train" ? "tgt tokens/s" : "sentences/s" }'
elif [ "${PEERS:-1}" != 0 ]; then
  echo "mt.sh: the PyTorch peer needs python3-torch and ../shared (tools/install-deps --bench): skipped" >&2
fi
