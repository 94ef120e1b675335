#!/usr/bin/env bash
# bench: gpt_small_train gpt2_124m_train bert_small_train fp32_fma_peak fp32_sgemm_peak fp32_kernels
#
# One training step (forward + loss, backward, AdamW) of GPT small (L4 C256 H4,
# T256 B8, V8192), GPT-2 124M (T64 B4) and BERT small (L4 C256 H4 FF1024, T128
# B16, V8192; MLM with 15% of the positions labelled + NSP) in fp32 with 2 threads:
# tokens/s and achieved GFLOP/s (model FLOPs: 6·params·tokens + attention,
# position tables not counted), next to the machine's fp32 peak measured in the
# same run (FMA throughput, and OpenBLAS sgemm through nlp_gemm on 2048² and
# 3072² squares), which matrix kernels ran (fp32_kernels: ours and the ISA, or
# OpenBLAS and its core), the fraction of the FMA peak, and the PyTorch peer
# (shared/peers/pytorch_bench.py) right after ours. PyTorch is a fair peer
# only over OpenBLAS: the libblas.so.3 alternative is checked and reported.
# The bf16 steps are tools/bench/bf16.sh's.
set -u
T="${NLPIPE_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
out() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }
val() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$2"; }

tmp="$(mktemp "${BENCH_TMP:-/tmp}/train.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
"$T/trainbench" peak -t $threads -r "$REPS" >"$tmp" || exit 1
cat "$tmp"
fma="$(val fp32_fma_peak "$tmp")"
# the matrix kernels that ran go with every share of the peak, so that two
# tables (ours and OpenBLAS, AVX-512 and AVX2) are not compared blindly
kern="$(val fp32_kernels "$tmp")"
for w in gpt_small gpt2_124m bert_small; do
  "$T/trainbench" train $w -t $threads -r "$REPS" >"$tmp" || exit 1
  cat "$tmp"
  g="$(val ${w}_train_gflops "$tmp")"
  out "${w}_train_peak" "$(awk -v g="$g" -v p="$fma" 'BEGIN { printf "%.1f", 100 * g / p }')" "%FMA(${kern:-?})"
done

if [ "${PEERS:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  blas="$(update-alternatives --query libblas.so.3-x86_64-linux-gnu 2>/dev/null | sed -n 's/^Value: //p')"
  case "$blas" in
    *openblas*) echo "train.sh: PyTorch runs over $blas" >&2 ;;
    *) echo "train.sh: warning: libblas.so.3 is '$blas', not OpenBLAS: PyTorch is no fair peer (see shared/peers/README.md)" >&2 ;;
  esac
  core="$(OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import torch; (torch.ones(256, 256) @ torch.ones(256, 256)).sum()' 2>&1 |
    sed -n 's/^Core: //p' | head -1)"
  out peer_openblas_core "${core:-?}" "(PyTorch)"
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SHARED/peers/pytorch_bench.py" --only gpt_small_train,gpt2_124m_train,bert_small_train \
    --threads $threads --reps "$REPS" 2>/dev/null |
    awk '$1 ~ /_train$/ && $3 == "tokens/s" { printf "%s@pytorch\t%s\ttokens/s\n", $1, $2 }'
fi
