#!/usr/bin/env bash
# bench: bleu_100k_1ref bleu_100k_4ref
# needs: data/parallel/en-de/train.de
#
# bleu on a 100,000-line German hypothesis against 1 and 4 references, one
# thread, seconds (median of $REPS runs). The data are made once into
# $BENCH_TMP/bleu from the first 100,000 lines of
# $SHARED/data/parallel/en-de/train.de: ref1 is those lines, ref2..ref4 and
# the hypothesis are copies with deterministic word-level noise (words
# dropped, repeated, swapped with the next word or replaced by a word seen
# earlier; tools/noise), so every machine makes the same bytes. The peer, sacreBLEU 2.5, is not installable here
# (PyPI only); shared/peers/README.md gives about 47 s and 117 s for it on a
# machine of this kind.
set -eu
: "${NLPIPE_BIN:?}" "${NLPIPE_TOOLS:?}" "${SHARED:?}" "${BENCH_TMP:=/tmp/nlpipe-bench}"
REPS="${REPS:-5}"
d="$BENCH_TMP/bleu"
src="$SHARED/data/parallel/en-de/train.de"
[ -r "$src" ] || { echo "bleu.sh: '$src' not found" >&2; exit 1; }

noise() { "$(dirname "$0")/../noise" "$@"; }

if [ ! -s "$d/hyp.de" ]; then
  mkdir -p "$d"
  head -n 100000 "$src" >"$d/ref1.de"
  noise 11 0.10 <"$d/ref1.de" >"$d/ref2.de"
  noise 12 0.15 <"$d/ref1.de" >"$d/ref3.de"
  noise 13 0.20 <"$d/ref1.de" >"$d/ref4.de"
  noise 7 0.30 <"$d/ref1.de" >"$d/hyp.de.tmp" && mv "$d/hyp.de.tmp" "$d/hyp.de"
fi

t1="$("$NLPIPE_TOOLS/benchtime" -n "$REPS" -w 1 -- "$NLPIPE_BIN/bleu" "$d/ref1.de" -i "$d/hyp.de" -b)"
t4="$("$NLPIPE_TOOLS/benchtime" -n "$REPS" -w 1 -- "$NLPIPE_BIN/bleu" "$d/ref1.de" "$d/ref2.de" "$d/ref3.de" "$d/ref4.de" -i "$d/hyp.de" -b)"
echo "bleu: 1 ref: $t1 (median s, peak MiB, min, max); 4 refs: $t4" >&2
printf 'bleu_100k_1ref\t%s\ts\n' "$(cut -f1 <<<"$t1")"
printf 'bleu_100k_4ref\t%s\ts\n' "$(cut -f1 <<<"$t4")"
