#!/usr/bin/env bash
# tools/bench/learn/mt.sh DIR [MINUTES] [PRETRAIN OPTION]... — the translation
# learning run of tools/bench/RESULTS.md: the `small` encoder-decoder (3+3 layers,
# d 256, 7.6M parameters) on ../shared/data/parallel/en-de (454,923 pairs) with a
# joint byte-level BPE of 8,000 tokens, label smoothing 0.1, dropout 0.1, Adam
# beta (0.9, 0.98), batches of 4,500 tokens, sentences of at most 64 tokens,
# warm-up 400 steps to 1.5e-3 then inverse square root, for MINUTES (default 35)
# on 2 threads; greedy BLEU on the first 500 dev pairs every 250 steps, then
# all 1,000 dev sentences greedy and with beam 4. Writes DIR/ende.json, DIR/run,
# DIR/mt.tsv, DIR/dev.greedy.de, DIR/dev.beam4.de, DIR/scores.txt, DIR/mt.png.
# Extra options go to pretrain (e.g. --bf16). TWIN=1 then runs the PyTorch twin
# (../shared/peers/twins/mt_twin.py) for as many minutes into DIR/twin.log and
# DIR/twin.tsv (minutes, valid_bleu).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: mt.sh DIR [MINUTES] [PRETRAIN OPTION]...}"
minutes="${2:-35}"
shift $(($# > 1 ? 2 : 1))
data="$SHARED/data/parallel/en-de"
mkdir -p "$dir"
[ -s "$dir/ende.json" ] || train-bpe --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 8000 -q \
  -o "$dir/ende.json" "$data/train.en" "$data/train.de"
pretrain --arch transformer --preset small --tokenizer "$dir/ende.json" --src "$data/train.en" --tgt "$data/train.de" \
  --valid-src "$data/dev.en" --valid-tgt "$data/dev.de" --valid-bleu 500 --max-time "$minutes" \
  --schedule inverse-sqrt --lr 1.5e-3 --warmup 400 --batch-tokens 4500 --max-length 64 --dropout 0.1 \
  --eval-every 250 --save-every 1000 -t 2 --log "$dir/mt.tsv" -m "$dir/run" "$@"
translate -m "$dir/run" -b 1 -t 2 <"$data/dev.en" >"$dir/dev.greedy.de"
translate -m "$dir/run" -b 4 -t 2 <"$data/dev.en" >"$dir/dev.beam4.de"
{ printf 'greedy\t'; bleu "$data/dev.de" -i "$dir/dev.greedy.de" -b; printf 'beam4\t'; bleu "$data/dev.de" -i "$dir/dev.beam4.de" -b; } >"$dir/scores.txt"
if [ "${TWIN:-0}" = 1 ]; then
  # the twin with its OpenBLAS on the best kernels for this CPU (tools/bench/pytorch.bash)
  . "$top/tools/bench/pytorch.bash"
  core="$(pytorch_best_core)"
  env -u OPENBLAS_L2_SIZE ${core:+OPENBLAS_CORETYPE=$core} OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SHARED/peers/twins/mt_twin.py" --minutes "$minutes" --threads 2 \
    --eval-every 5 --bleu-cmd "$top/bin/bleu" >"$dir/twin.log" 2>&1
  # its "DEV step N elapsed Ss dev500 greedy BLEU B" lines (the twin's minutes include its evaluations)
  { printf 'minutes\tvalid_bleu\n'
    sed -nE 's/.*DEV step [0-9]+ elapsed ([0-9.]+)s dev500 greedy BLEU ([0-9.]+).*/\1\t\2/p' "$dir/twin.log" |
      awk -F'\t' '{ printf "%.2f\t%s\n", $1 / 60, $2 }'; } >"$dir/twin.tsv"
fi
logs=("$dir/mt.tsv=nlpipe")
[ -s "$dir/twin.tsv" ] && logs+=("$dir/twin.tsv=PyTorch twin")
"$top/tools/plot-log" -x minutes -y bleu -o "$dir/mt.png" "${logs[@]}"
