#!/usr/bin/env bash
# bench: encode_spm32k
# needs: data/lm/train.txt data/parallel/en-de/train.en data/parallel/en-de/train.de
#
# Sentencepiece encoding, side by side with sentencepiece itself:
#
#   encode_spm32k       tokenize -m unigram-32k.model -t 1 CORPUS > /dev/null, the
#                       whole process (loading the model, reading, encoding,
#                       printing ids), MB/s over shared/data/lm/train.txt (21 MB;
#                       MB = 1e6 bytes)
#     @spm              spm_encode --model=unigram-32k.model --output_format=id
#                       < CORPUS > /dev/null (Debian's sentencepiece 0.1.97, one
#                       thread: spm_encode has no threads), the whole process too
#
# The model: a 32,000-piece unigram model with spm_train's defaults (nmt_nfkc),
# trained here once on the first 40,000 lines of lm/train.txt and 100,000 each
# of parallel/en-de/train.en and train.de, and kept in $TMP/spm (tools/spm-exact
# trains the same one). Without spm_train the benchmark is skipped; both sides'
# ids are compared once (the script fails if they differ).
# Environment as tools/bench/run sets it (see tokenize.sh).
. "$(dirname "$0")/peers.bash"
want encode_spm32k || exit 0
for c in spm_train spm_encode; do
  command -v $c >/dev/null || { echo "bench: encode_spm32k skipped: no $c (apt-get install sentencepiece)" >&2
    printf 'encode_spm32k\tskipped\tno %s\n' "$c"; exit 0; }
done
D="$SHARED/data"
M="$TMP/spm/unigram-32k.model"
if [ ! -s "$M" ]; then
  mkdir -p "$TMP/spm"
  { head -n 40000 "$D/lm/train.txt"; head -n 100000 "$D/parallel/en-de/train.en"; head -n 100000 "$D/parallel/en-de/train.de"; } >"$TMP/spm/corpus.txt"
  echo "bench: training $M (spm_train, once)" >&2
  spm_train --input="$TMP/spm/corpus.txt" --model_prefix="$TMP/spm/unigram-32k" --model_type=unigram --vocab_size=32000 \
    --num_threads=2 >"$TMP/spm/train.log" 2>&1 || { echo "bench: spm_train failed: $(tail -1 "$TMP/spm/train.log")" >&2; exit 1; }
fi
spm_encode --model="$M" --output_format=id <"$CORPUS" >"$TMP/spm/ref.ids"
"$BIN/tokenize" -t 1 -m "$M" "$CORPUS" >"$TMP/spm/ours.ids"
if ! cmp -s "$TMP/spm/ref.ids" "$TMP/spm/ours.ids"; then
  echo "bench: encode_spm32k: ids differ from spm_encode's on $(diff "$TMP/spm/ref.ids" "$TMP/spm/ours.ids" | grep -c '^<') lines" >&2
  exit 1
fi
echo "bench: encode_spm32k: ids identical to spm_encode's ($(wc -l <"$TMP/spm/ref.ids") lines)" >&2
r=$("$TOOLS/benchtime" -n "$REPS" -w 1 -- "$BIN/tokenize" -m "$M" -t 1 "$CORPUS") || exit 1
echo "bench: encode_spm32k: median $(cut -f1 <<<"$r")s over $REPS runs (min $(cut -f3 <<<"$r")), peak $(cut -f2 <<<"$r") MiB" >&2
printf 'encode_spm32k\t%s\tMB/s\n' "$(mbs "$(cut -f1 <<<"$r")")"
if [ "$PEERS" != 0 ]; then
  r=$("$TOOLS/benchtime" -n "$REPS" -w 1 -i "$CORPUS" -- spm_encode --model="$M" --output_format=id) || exit 1
  echo "bench: encode_spm32k@spm: median $(cut -f1 <<<"$r")s over $REPS runs (min $(cut -f3 <<<"$r")), peak $(cut -f2 <<<"$r") MiB" >&2
  printf 'encode_spm32k@spm\t%s\tMB/s\n' "$(mbs "$(cut -f1 <<<"$r")")"
fi
