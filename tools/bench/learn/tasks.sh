#!/usr/bin/env bash
# tools/bench/learn/tasks.sh DIR LM_RUN [MINUTES] — the downstream-task runs of
# tools/bench/RESULTS.md (issue 30): BERT's question answering, GPT's (and
# BERT's) multiple choice and GPT-3's in-context learning, on ../shared/data.
#
# 1. BERT `small` pretrained for MINUTES (default 25) on lm/train.txt with a
#    WordPiece of 8,192 (DIR/wp.json, DIR/bert, DIR/bert.tsv), 256 positions.
# 2. QA (qa/, SQuAD v1.1): every third training passage (DIR/qa-train.json),
#    1 epoch, --max-length 256, from DIR/bert and from random init
#    (--from-scratch); dev predictions DIR/qa-V.pred.json scored by
#    `finetune eval` (DIR/qa-V.eval.json) and by qa/squad_eval.py
#    (DIR/qa-V.squad.json) — the two must agree.
# 3. Multiple choice (choice/, 4-way): the first 4,000 training items, 2 epochs:
#    GPT from LM_RUN with lambda 0.5 and 0, GPT from random init, BERT from
#    DIR/bert; dev accuracy in DIR/choice-V.eval.json.
# 4. In-context: LM_RUN, no fine-tuning, on classify/section dev and choice dev
#    with K = 0, 1, 4, 8 shots from the training sets (seed 0), candidates
#    ranked by unconditional normalization (and, for choice, per token too)
#    (DIR/icl-DATA-K-NORM.json).
# DIR/scores.txt gathers every figure. A step whose output exists is skipped,
# so the script can be run again after an interruption.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: tasks.sh DIR LM_RUN [MINUTES]}"
lm="${2:?usage: tasks.sh DIR LM_RUN [MINUTES]}"
minutes="${3:-25}"
data="$SHARED/data"
mkdir -p "$dir"
score() { printf '%s\n' "$*" | tee -a "$dir/scores.txt"; }
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p" "$2" | head -n 1; }

# 1. BERT
[ -s "$dir/wp.json" ] || train-wordpiece --vocab-size 8192 -q -o "$dir/wp.json" "$data/lm/train.txt"
[ -s "$dir/bert/model.bin" ] || [ -e "$dir/bert.done" ] ||
  pretrain --arch bert --preset small --tokenizer "$dir/wp.json" --valid "$data/lm/valid.txt" --max-time "$minutes" \
    --max-length 256 -t 2 --log "$dir/bert.tsv" -m "$dir/bert" "$data/lm/train.txt"
touch "$dir/bert.done"

# 2. QA
[ -s "$dir/qa-train.json" ] || jq -c '{version: .version, data: [{title: "every third passage",
  paragraphs: ([.data[].paragraphs[]] | to_entries | map(select(.key % 3 == 0) | .value))}]}' \
  "$data/qa/train.json" >"$dir/qa-train.json"
for v in pre scratch; do
  [ -s "$dir/qa-$v.squad.json" ] && continue
  extra=()
  [ $v = scratch ] && extra=(--from-scratch)
  finetune --init "$dir/bert" "${extra[@]}" --valid "$data/qa/dev.json" --epochs 1 --max-length 256 -t 2 \
    --log "$dir/qa-$v.tsv" -m "$dir/qa-$v" --force "$dir/qa-train.json"
  finetune predict -m "$dir/qa-$v" -t 2 "$data/qa/dev.json" >"$dir/qa-$v.pred.json"
  finetune eval -m "$dir/qa-$v" -t 2 --json "$data/qa/dev.json" >"$dir/qa-$v.eval.json"
  /usr/bin/python3 "$data/qa/squad_eval.py" "$data/qa/dev.json" "$dir/qa-$v.pred.json" >"$dir/qa-$v.squad.json"
  score "qa $v: finetune eval $(tr -d '\n ' <"$dir/qa-$v.eval.json"); squad_eval.py $(cat "$dir/qa-$v.squad.json")"
done

# 3. Multiple choice
[ -s "$dir/choice-train.tsv" ] || head -n 4000 "$data/choice/train.tsv" >"$dir/choice-train.tsv"
for v in gpt gpt-lm0 gpt-scratch bert; do
  [ -s "$dir/choice-$v.eval.json" ] && continue
  case $v in
  gpt) args=(--init "$lm") ;;
  gpt-lm0) args=(--init "$lm" --lm-weight 0) ;;
  gpt-scratch) args=(--init "$lm" --from-scratch) ;;
  bert) args=(--init "$dir/bert") ;;
  esac
  finetune "${args[@]}" --valid "$data/choice/dev.tsv" --epochs 2 -t 2 --log "$dir/choice-$v.tsv" \
    -m "$dir/choice-$v" --force "$dir/choice-train.tsv"
  finetune eval -m "$dir/choice-$v" -t 2 --json "$data/choice/dev.tsv" >"$dir/choice-$v.eval.json"
  score "choice $v: accuracy $(field accuracy "$dir/choice-$v.eval.json")"
done

# 4. In-context
for set in section choice; do
  case $set in
  section) dev="$data/classify/section/dev.tsv" train="$data/classify/section/train.tsv" ;;
  choice) dev="$data/choice/dev.tsv" train="$data/choice/train.tsv" ;;
  esac
  norms="tokens unconditional"
  [ $set = section ] && norms=unconditional # 14 candidates an item: the labels' prior matters most
  for norm in $norms; do
    for k in 0 1 4 8; do
      out="$dir/icl-$set-$k-$norm.json"
      [ -s "$out" ] || generate -m "$lm" --eval-choices "$dev" --shots $k --shots-from "$train" --seed 0 \
        --normalize $norm -t 2 >"$out" 2>"$dir/icl-$set-$k-$norm.err"
      score "icl $set K=$k $norm: accuracy $(field accuracy "$out") mean_shots $(field mean_shots "$out")"
    done
  done
done
