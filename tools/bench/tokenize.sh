#!/usr/bin/env bash
# bench: encode_gpt2 encode_gpt2_t2 train_bpe_30k train_bpe_30k_mem train_bpe_30k_t2 train_bpe_30k_t2_mem
# needs: data/lm/train.txt vectors/tokenize/gpt2
#
# Tokenizer speed on shared/data/lm/train.txt (21 MB), side by side with the
# peers of shared/peers/tok (run right after ours, same input, same machine):
#
#   encode_gpt2[_t2]       tokenize -m gpt2/ (ids to /dev/null), 1 [2] threads, MB/s
#                          (MB = 1e6 bytes). Ours is the whole process: loading
#                          GPT-2's files, reading, encoding, printing; the peers
#                          time their encode loop only.
#     @tiktoken            tiktoken 1.0.22 (Rust core in WASM, one thread)
#     @hf                  HF tokenizers 0.23.2 GPT-2 (Node binding), RAYON_NUM_THREADS=1 [2]
#   train_bpe_30k[_t2]     train-bpe --byte-level --vocab-size 30000 --min-frequency 0,
#                          1 [2] threads, seconds (whole process; HF times train() only)
#   train_bpe_30k[_t2]_mem peak resident memory of that process, MiB
#     @hf                  RAYON_NUM_THREADS=1 [2] node hf-train.js bpe (same settings,
#                          but an alphabet of the bytes seen; see below)
#
# Also checked (stderr; the script fails if not): `train-bpe --byte-level
# --no-byte-alphabet` (HF's trainer without an initial alphabet, which is what
# the Node binding runs) gives exactly the merges and vocabulary HF writes.
#
# Environment (set by tools/bench/run): NLPIPE_BIN, NLPIPE_TOOLS, SHARED, REPS
# (runs per figure, default 5), PEERS (0 = skip the peers), BENCH_TMP. The
# peers need node and the npm packages in /tmp/nlpipe-peers (installed here
# when missing and npm works). Run it through `make bench BENCH=encode_gpt2`,
# which holds the benchmark lock.
. "$(dirname "$0")/peers.bash"   # settings, corpus, want, mbs, peers_ok
GPT2="$SHARED/vectors/tokenize/gpt2"

# --- encoding
for t in 1 2; do
  name=encode_gpt2; [ $t = 2 ] && name=encode_gpt2_t2
  want $name || continue
  r=$("$TOOLS/benchtime" -n "$REPS" -w 1 -- "$BIN/tokenize" -m "$GPT2" -t $t "$CORPUS") || exit 1
  s=$(cut -f1 <<<"$r")
  echo "bench: $name: median ${s}s over $REPS runs, peak $(cut -f2 <<<"$r") MiB" >&2
  printf '%s\t%s\tMB/s\n' "$name" "$(mbs "$s")"
  if [ $peers_ok = 1 ]; then
    if [ $t = 1 ]; then
      line=$(node "$PEERDIR/tiktoken-encode.js" tiktoken "$CORPUS" none --reps "$REPS" 2>&1 >/dev/null | grep 'MB/s=')
      echo "bench: $name@tiktoken: $line" >&2
      printf '%s@tiktoken\t%s\tMB/s\n' "$name" "$(sed -E 's/.*MB\/s=([0-9.]+).*/\1/' <<<"$line")"
    fi
    line=$(RAYON_NUM_THREADS=$t node "$PEERDIR/hf-encode.js" gpt2 "$CORPUS" none --reps "$REPS" 2>&1 >/dev/null | grep 'MB/s=')
    echo "bench: $name@hf: $line" >&2
    printf '%s@hf\t%s\tMB/s\n' "$name" "$(sed -E 's/.*MB\/s=([0-9.]+).*/\1/' <<<"$line")"
  fi
done

# --- training
for t in 1 2; do
  name=train_bpe_30k; [ $t = 2 ] && name=train_bpe_30k_t2
  want $name || want ${name}_mem || continue
  r=$("$TOOLS/benchtime" -n "$REPS" -- "$BIN/train-bpe" --byte-level --vocab-size 30000 --min-frequency 0 -t $t \
        "$CORPUS" -o "$TMP/ours-30k.json") || exit 1
  echo "bench: $name: median $(cut -f1 <<<"$r")s over $REPS runs (min $(cut -f3 <<<"$r"), max $(cut -f4 <<<"$r")), peak $(cut -f2 <<<"$r") MiB" >&2
  printf '%s\t%s\ts\n' "$name" "$(cut -f1 <<<"$r")"
  printf '%s_mem\t%s\tMiB\n' "$name" "$(cut -f2 <<<"$r")"
  if [ $peers_ok = 1 ]; then
    : >"$TMP/hf-train.times"
    : >"$TMP/hf-train.mem"
    for ((i = 0; i < REPS; i++)); do
      m=$( { RAYON_NUM_THREADS=$t /usr/bin/time -f 'maxrss=%M' node "$PEERDIR/hf-train.js" bpe "$CORPUS" "$TMP/hf-bpe.json"; } 2>&1 |
           tee -a "$TMP/hf-train.log" | sed -nE 's/.*seconds=([0-9.]+).*/t \1/p; s/^maxrss=([0-9]+)/m \1/p')
      sed -n 's/^t //p' <<<"$m" >>"$TMP/hf-train.times"
      sed -n 's/^m //p' <<<"$m" >>"$TMP/hf-train.mem"
    done
    hs=$(median <"$TMP/hf-train.times")
    hm=$(sort -g "$TMP/hf-train.mem" | tail -1 | awk '{ printf "%.1f", $1 / 1024 }')
    echo "bench: $name@hf: train() median ${hs}s over $REPS runs ($(tr '\n' ' ' <"$TMP/hf-train.times")), peak $hm MiB" >&2
    printf '%s@hf\t%s\ts\n' "$name" "$hs"
    printf '%s_mem@hf\t%s\tMiB\n' "$name" "$hm"
  fi
done

# --- exactness on the full corpus: our merges and vocabulary are HF's
if [ $peers_ok = 1 ] && [ -f "$TMP/hf-bpe.json" ] && { want train_bpe_30k || want train_bpe_30k_t2; }; then
  "$BIN/train-bpe" -q --byte-level --no-byte-alphabet --vocab-size 30000 --min-frequency 0 "$CORPUS" -o "$TMP/ours-seen.json" || exit 1
  if python3 - "$TMP/hf-bpe.json" "$TMP/ours-seen.json" "$TMP/ours-30k.json" >&2 <<'PY'
import json, sys
h, o, b = (json.load(open(p)) for p in sys.argv[1:4])
m = lambda j: [tuple(x) if isinstance(x, list) else tuple(x.split(' ')) for x in j['model']['merges']]
same = m(h) == m(o) and h['model']['vocab'] == o['model']['vocab']
prefix = m(b) == m(h)[:len(m(b))]
print('bench: full corpus, --no-byte-alphabet: %d merges, merges and vocabulary %s HF\'s' % (len(m(o)), 'equal' if same else 'DIFFER FROM'))
print('bench: full corpus, 256-byte alphabet: the %d merges are %sa prefix of HF\'s' % (len(m(b)), '' if prefix else 'NOT '))
sys.exit(0 if same and prefix else 1)
PY
  then :; else echo "bench: merges differ from HF's" >&2; exit 1; fi
fi
