#!/usr/bin/env bash
# tools/bench/learn/scarce.sh DIR [P] [M] [PAIRS...] — issue 28's table: what
# T5's span corruption and BART's denoising buy for translation when parallel
# text is scarce, on ../shared/data/parallel/en-de.
#
# Monolingual text: the English and the German sides of the training lines
# after the first 20,000, each shuffled on its own (seeded: no alignment leaks
# in), one file; one byte-level BPE of 8,000 for both languages (DIR/mono.json).
# Pretraining (the `small` encoder-decoder, mt.sh's recipe) for P minutes
# (default 20) with --objective span (DIR/span) and --objective denoise
# (DIR/denoise). Then, for each PAIRS (default 20000 100000: the first N
# training pairs), four rows trained on those pairs with mt.sh's recipe:
#   scratch-N   random init, M minutes (default 10)
#   span-N      --init DIR/span, M minutes
#   denoise-N   --init DIR/denoise, M minutes
#   long-N      random init, P + M minutes (equal total time)
# each scored on all 1,000 dev sentences greedy and with beam 4 (sacreBLEU's
# BLEU through `bleu`); DIR/scores.txt collects one line a row. A row whose
# DIR/NAME.bleu exists is skipped, so the script resumes where it stopped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: scarce.sh DIR [P] [M] [PAIRS...]}"
P="${2:-20}"
M="${3:-10}"
shift $(($# > 3 ? 3 : $#))
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(20000 100000)
data="$SHARED/data/parallel/en-de"
mkdir -p "$dir"

# seeded shuffle (the coreutils way: shuf reading its randomness from a stream)
seeded() { openssl enc -aes-256-ctr -pass pass:"$1" -nosalt </dev/zero 2>/dev/null; }
if [ ! -s "$dir/mono.txt" ]; then
  { tail -n +20001 "$data/train.en" | shuf --random-source=<(seeded en)
    tail -n +20001 "$data/train.de" | shuf --random-source=<(seeded de); } >"$dir/mono.tmp"
  mv "$dir/mono.tmp" "$dir/mono.txt"
  head -n 2000 "$dir/mono.txt" >"$dir/mono-valid.txt" # English only: a loss to watch, not a score
fi
[ -s "$dir/mono.json" ] || train-bpe --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 8000 -q \
  -o "$dir/mono.json" "$dir/mono.txt"

recipe=(--arch transformer --preset small --schedule inverse-sqrt --lr 1.5e-3 --warmup 400 --batch-tokens 4500
  --max-length 64 --dropout 0.1 -t 2)
score() { echo "$*" | tee -a "$dir/scores.txt"; }

for obj in span denoise; do
  [ -e "$dir/$obj.done" ] && continue
  pretrain "${recipe[@]}" --objective $obj --tokenizer "$dir/mono.json" --valid "$dir/mono-valid.txt" \
    --max-time "$P" --eval-every 250 --log "$dir/$obj.tsv" -m "$dir/$obj" --force "$dir/mono.txt"
  touch "$dir/$obj.done"
  score "pretrain $obj $P min: $(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; next }
    $8 != "" { l = ""; for (i = 1; i <= NF; i++) if (i <= 2 || i >= 8) l = l h[i] " " $i " " } END { print l }' "$dir/$obj.tsv")"
done

for n in "${pairs[@]}"; do
  [ -s "$dir/train$n.en" ] || { head -n "$n" "$data/train.en" >"$dir/train$n.en"; head -n "$n" "$data/train.de" >"$dir/train$n.de"; }
  for row in scratch span denoise long; do
    name=$row-$n
    [ -s "$dir/$name.bleu" ] && continue
    minutes=$M from=()
    case $row in
    scratch) from=(--tokenizer "$dir/mono.json") ;;
    long) from=(--tokenizer "$dir/mono.json") minutes=$(awk -v p="$P" -v m="$M" 'BEGIN { print p + m }') ;;
    *) from=(--init "$dir/$row") ;;
    esac
    pretrain "${recipe[@]}" "${from[@]}" --src "$dir/train$n.en" --tgt "$dir/train$n.de" \
      --valid-src "$data/dev.en" --valid-tgt "$data/dev.de" --valid-bleu 500 --max-time "$minutes" \
      --eval-every 250 --log "$dir/$name.tsv" -m "$dir/$name" --force
    translate -m "$dir/$name" -b 1 -t 2 <"$data/dev.en" >"$dir/$name.greedy.de"
    translate -m "$dir/$name" -b 4 -t 2 <"$data/dev.en" >"$dir/$name.beam4.de"
    g=$(bleu "$data/dev.de" -i "$dir/$name.greedy.de" -b)
    b=$(bleu "$data/dev.de" -i "$dir/$name.beam4.de" -b)
    echo "$g $b" >"$dir/$name.bleu"
    score "$name ($minutes min): greedy $g beam4 $b"
  done
done
