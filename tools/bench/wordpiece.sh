#!/usr/bin/env bash
# bench: train_wordpiece_30k train_wordpiece_30k_mem encode_bert train_wordpiece_freq_30k
# needs: data/lm/train.txt vectors/tokenize/bert-base-uncased-vocab.txt
#
# WordPiece speed on shared/data/lm/train.txt (21 MB), one thread, side by side
# with the peers (run right after ours, same input, same machine):
#
#   encode_bert                tokenize -m bert-base-uncased-vocab.txt -t 1
#                              --no-special-tokens (ids to /dev/null), MB/s
#                              (MB = 1e6 bytes): the whole process (loading the
#                              vocabulary, reading, BERT normalization and
#                              pre-tokenization, WordPiece, printing)
#     @hf                      HF tokenizers 0.23.2 BERT (Node binding,
#                              shared/peers/tok/hf-encode.js bert),
#                              RAYON_NUM_THREADS=1; its encode loop only
#   train_wordpiece_30k        train-wordpiece --vocab-size 30000 -t 1 (likelihood
#                              score, BERT uncased pipeline, 5 special tokens,
#                              min frequency 2), seconds
#   train_wordpiece_30k_mem    peak resident memory of that process, MiB
#     @train-bpe               train-bpe --vocab-size 30000 -t 1: classic BPE on
#                              white-space-split words, min frequency 2: the
#                              "within 2x of train-bpe at the same size" yardstick
#   train_wordpiece_freq_30k   train-wordpiece --score frequency --special-tokens ''
#                              --min-frequency 0 -t 1 (HF's WordPieceTrainer and
#                              its Node binding's settings), seconds
#     @hf                      RAYON_NUM_THREADS=1 node hf-train.js wordpiece
#                              (train() only)
#
# Also checked (stderr; the script fails if not): our ids equal HF's on the
# whole corpus; and reported: how many of the 30,000 tokens of the frequency
# variant HF's run has too (HF numbers ## spellings in hash order, so its last
# few merges, ties, differ from run to run; see the report line).
#
# Environment (set by tools/bench/run): NLPIPE_BIN, NLPIPE_TOOLS, SHARED, REPS
# (runs per figure, default 5), PEERS (0 = skip the peers), BENCH_TMP. The
# peers need node and the npm package in /tmp/nlpipe-peers. Run it through
# `make bench BENCH=encode_bert`, which holds the benchmark lock.
. "$(dirname "$0")/peers.bash"   # settings, corpus, want, mbs, peers_ok
VOCAB="$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt"

# timed runs: "median<TAB>peak MiB" of CMD (stdout discarded), with a report line
timed() { # name cmd...
  local name="$1" r
  shift
  r=$("$TOOLS/benchtime" -n "$REPS" -w 1 -- "$@") || exit 1
  echo "bench: $name: median $(cut -f1 <<<"$r")s over $REPS runs (min $(cut -f3 <<<"$r"), max $(cut -f4 <<<"$r")), peak $(cut -f2 <<<"$r") MiB" >&2
  printf '%s\n' "$r"
}

# --- encoding
if want encode_bert; then
  r=$(timed encode_bert "$BIN/tokenize" -m "$VOCAB" -t 1 --no-special-tokens "$CORPUS") || exit 1
  printf 'encode_bert\t%s\tMB/s\n' "$(mbs "$(cut -f1 <<<"$r")")"
  if [ $peers_ok = 1 ]; then
    line=$(RAYON_NUM_THREADS=1 node "$PEERDIR/hf-encode.js" bert "$CORPUS" none --reps "$REPS" 2>&1 >/dev/null | grep 'MB/s=')
    echo "bench: encode_bert@hf: $line" >&2
    printf 'encode_bert@hf\t%s\tMB/s\n' "$(sed -E 's/.*MB\/s=([0-9.]+).*/\1/' <<<"$line")"
    # exactness on the whole corpus
    RAYON_NUM_THREADS=1 node "$PEERDIR/hf-encode.js" bert "$CORPUS" "$TMP/hf-bert.ids" 2>/dev/null
    "$BIN/tokenize" -m "$VOCAB" --no-special-tokens "$CORPUS" >"$TMP/ours-bert.ids"
    if cmp -s "$TMP/hf-bert.ids" "$TMP/ours-bert.ids"; then
      echo "bench: full corpus: our BERT ids equal HF's ($(wc -w <"$TMP/ours-bert.ids") tokens, $(wc -l <"$TMP/ours-bert.ids") lines)" >&2
    else
      echo "bench: full corpus: our BERT ids DIFFER from HF's" >&2
      exit 1
    fi
  fi
fi

# --- training, likelihood score, and train-bpe at the same size
if want train_wordpiece_30k || want train_wordpiece_30k_mem; then
  r=$(timed train_wordpiece_30k "$BIN/train-wordpiece" --vocab-size 30000 -t 1 "$CORPUS" -o "$TMP/wp-30k.json") || exit 1
  printf 'train_wordpiece_30k\t%s\ts\n' "$(cut -f1 <<<"$r")"
  printf 'train_wordpiece_30k_mem\t%s\tMiB\n' "$(cut -f2 <<<"$r")"
  r=$(timed train_wordpiece_30k@train-bpe "$BIN/train-bpe" --vocab-size 30000 -t 1 "$CORPUS" -o "$TMP/bpe-30k.json") || exit 1
  printf 'train_wordpiece_30k@train-bpe\t%s\ts\n' "$(cut -f1 <<<"$r")"
  printf 'train_wordpiece_30k_mem@train-bpe\t%s\tMiB\n' "$(cut -f2 <<<"$r")"
fi

# --- training, HF's frequency variant
if want train_wordpiece_freq_30k; then
  r=$(timed train_wordpiece_freq_30k "$BIN/train-wordpiece" -q --score frequency --special-tokens '' --min-frequency 0 \
        --vocab-size 30000 -t 1 "$CORPUS" -o "$TMP/wpf-30k.json") || exit 1
  printf 'train_wordpiece_freq_30k\t%s\ts\n' "$(cut -f1 <<<"$r")"
  if [ $peers_ok = 1 ]; then
    : >"$TMP/hf-wp.times"
    for ((i = 0; i < REPS; i++)); do
      RAYON_NUM_THREADS=1 node "$PEERDIR/hf-train.js" wordpiece "$CORPUS" "$TMP/hf-wp.json" 2>&1 >/dev/null |
        sed -nE 's/.*seconds=([0-9.]+).*/\1/p' >>"$TMP/hf-wp.times"
    done
    hs=$(median <"$TMP/hf-wp.times")
    echo "bench: train_wordpiece_freq_30k@hf: train() median ${hs}s over $REPS runs ($(tr '\n' ' ' <"$TMP/hf-wp.times"))" >&2
    printf 'train_wordpiece_freq_30k@hf\t%s\ts\n' "$hs"
    python3 - "$TMP/hf-wp.json" "$TMP/wpf-30k.json" >&2 <<'PY'
import json, sys
h, o = (set(json.load(open(p))['model']['vocab']) for p in sys.argv[1:3])
print('bench: full corpus, --score frequency: %d of our %d tokens are in HF\'s last run (HF only: %s; ours only: %s)'
      % (len(h & o), len(o), ' '.join(sorted(h - o)[:8]), ' '.join(sorted(o - h)[:8])))
PY
  fi
fi
