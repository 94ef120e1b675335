#!/usr/bin/env bash
# tools/bench/learn/ft.sh DIR LM_RUN [N] [FINETUNE OPTION]... — the fine-tuning
# learning run of tools/bench/RESULTS.md: GPT fine-tuned into a classifier of
# ../shared/data/classify/section (Debian package descriptions → their
# section, 16,885 training and 2,206 dev lines), from the pretrained LM_RUN
# (lm.sh's DIR/run, say) and from random weights of the same shape and
# tokenizer (--from-scratch), on the first N training lines (default 4,000),
# 3 epochs, B 32, lr 6.25e-5 (GPT's), lambda 0.5, 2 threads, dev accuracy and
# macro-F1 after each epoch. Writes DIR/pre and DIR/scratch (run directories),
# DIR/pre.tsv and DIR/scratch.tsv (the logs), DIR/pre.eval.json and
# DIR/scratch.eval.json (`finetune eval --json` on dev), DIR/scores.txt (their
# accuracy and macro-F1) and DIR/ft.png (dev accuracy against minutes) and
# DIR/ft-loss.png (training loss against steps).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: ft.sh DIR LM_RUN [N] [FINETUNE OPTION]...}"
lm="${2:?usage: ft.sh DIR LM_RUN [N] [FINETUNE OPTION]...}"
n="${3:-4000}"
shift $(($# > 2 ? 3 : 2))
data="$SHARED/data/classify/section"
mkdir -p "$dir"
head -n "$n" "$data/train.tsv" >"$dir/train.tsv"
: >"$dir/scores.txt"
for v in pre scratch; do
  extra=()
  [ $v = scratch ] && extra=(--from-scratch)
  finetune --init "$lm" "${extra[@]}" --valid "$data/dev.tsv" --labels "$data/labels.txt" --epochs 3 -B 32 \
    -t 2 --log "$dir/$v.tsv" -m "$dir/$v" --force "$@" "$dir/train.tsv"
  finetune eval -m "$dir/$v" -t 2 --json "$data/dev.tsv" >"$dir/$v.eval.json"
  printf '%s\taccuracy %s\tmacro_f1 %s\n' $v "$(sed -n 's/^  "accuracy": \(.*\),$/\1/p' "$dir/$v.eval.json")" \
    "$(sed -n 's/^  "macro_f1": \(.*\),$/\1/p' "$dir/$v.eval.json")" >>"$dir/scores.txt"
done
"$top/tools/plot-log" -x minutes -y accuracy -o "$dir/ft.png" "$dir/pre.tsv=pretrained" "$dir/scratch.tsv=random init"
"$top/tools/plot-log" --smooth 20 -o "$dir/ft-loss.png" "$dir/pre.tsv=pretrained" "$dir/scratch.tsv=random init"
