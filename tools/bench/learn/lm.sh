#!/usr/bin/env bash
# tools/bench/learn/lm.sh DIR [MINUTES] [PRETRAIN OPTION]... — the language-model
# learning run of tools/bench/RESULTS.md: GPT `small` on ../shared/data/lm with the
# recipe of the PyTorch twin (../shared/peers/twins/lm_twin.py): a byte-level BPE
# of 8,192 tokens, AdamW beta2 0.95, weight decay 0.1, warm-up 200 steps to 1e-3,
# cosine to 1e-4, clip 1.0, B 8 x 256, no dropout, for MINUTES (default 30) on 2
# threads, validated on lm/valid.txt every 100 steps (bits per byte). Writes
# DIR/tok.json, DIR/run (the run directory), DIR/lm.tsv (the log) and
# DIR/lm.png (tools/plot-log). Extra options go to pretrain (e.g. --bf16).
# TWIN=1 then runs the twin for as many minutes into DIR/twin.log and
# DIR/twin.tsv (minutes, valid_bpb), its OpenBLAS on the best kernels for the
# CPU (OPENBLAS_CORETYPE as tools/bench/pytorch.bash chooses, OPENBLAS_L2_SIZE unset).
# SKIP_OURS=1 runs only the twin (and the plot) on a DIR whose run is done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: lm.sh DIR [MINUTES] [PRETRAIN OPTION]...}"
minutes="${2:-30}"
shift $(($# > 1 ? 2 : 1))
data="$SHARED/data/lm"
mkdir -p "$dir"
[ -s "$dir/tok.json" ] || train-bpe --byte-level --special-tokens '<|endoftext|>' --vocab-size 8192 -q -o "$dir/tok.json" "$data/train.txt"
[ "${SKIP_OURS:-0}" = 1 ] || pretrain --preset small --tokenizer "$dir/tok.json" --valid "$data/valid.txt" --max-time "$minutes" \
  --lr 1e-3 --min-lr 1e-4 --warmup 200 -B 8 --max-length 256 --weight-decay 0.1 --beta2 0.95 \
  --grad-clip 1 --dropout 0 --attention-dropout 0 --eval-every 100 --save-every 500 -t 2 \
  --log "$dir/lm.tsv" -m "$dir/run" "$@" "$data/train.txt"
if [ "${TWIN:-0}" = 1 ]; then
  # the twin with its OpenBLAS on the best kernels for this CPU (tools/bench/pytorch.bash)
  . "$top/tools/bench/pytorch.bash"
  core="$(pytorch_best_core)"
  env -u OPENBLAS_L2_SIZE ${core:+OPENBLAS_CORETYPE=$core} OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SHARED/peers/twins/lm_twin.py" --minutes "$minutes" --eval-every 1 \
    --threads 2 >"$dir/twin.log" 2>&1
  { printf 'minutes\tvalid_bpb\n'; awk -F'\t' '$1 == "lm_twin" && $2 == "curve" { print $3 "\t" $4 }' "$dir/twin.log"; } >"$dir/twin.tsv"
fi
logs=("$dir/lm.tsv=nlpipe")
[ -s "$dir/twin.tsv" ] && logs+=("$dir/twin.tsv=PyTorch twin")
"$top/tools/plot-log" -x minutes -y bpb -o "$dir/lm.png" "${logs[@]}"
