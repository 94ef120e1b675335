# tools/bench/peers.bash — sourced by the tokenizer benchmarks (not a benchmark:
# tools/bench/run runs *.sh only).
#
# npm_peers_ready: 0 when the Node peers of shared/peers/tok can run (node, and
# HF tokenizers 0.23.2 + tiktoken 1.0.22 in /tmp/nlpipe-peers, installed here
# when missing and npm works), 1 otherwise or when PEERS=0; says why on stderr.
# median: the median of the numbers on standard input.
NM=/tmp/nlpipe-peers/node_modules
#
# Sourcing it also sets what both tokenizer benchmarks start with: BIN, TOOLS,
# SHARED, REPS, PEERS, TMP (from the environment tools/bench/run sets), the
# corpus CORPUS and its size `bytes`, PEERDIR, `want NAME` (is NAME among the
# selected benchmarks), `mbs SECONDS` (MB/s over the corpus) and peers_ok.

npm_peers_ready() {
  [ "${PEERS:-1}" != 0 ] || return 1
  command -v node >/dev/null 2>&1 || { echo "bench: no node; skipping the peers" >&2; return 1; }
  if { [ ! -d "$NM/tokenizers" ] || [ ! -d "$NM/tiktoken" ]; } && command -v npm >/dev/null 2>&1; then
    echo "bench: installing the npm peers into /tmp/nlpipe-peers" >&2
    npm install --prefix /tmp/nlpipe-peers tokenizers@0.23.2 tiktoken@1.0.22 >&2 2>&1 || true
  fi
  [ -d "$NM/tokenizers" ] && [ -d "$NM/tiktoken" ] && return 0
  echo "bench: npm peers missing; skipping them" >&2
  return 1
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

set -u
BIN="${NLPIPE_BIN:-bin}"
TOOLS="${NLPIPE_TOOLS:-tools}"
SHARED="${SHARED:-../shared}"
REPS="${REPS:-5}"
PEERS="${PEERS:-1}"
TMP="${BENCH_TMP:-/tmp/nlpipe-bench}"
mkdir -p "$TMP"
CORPUS="$SHARED/data/lm/train.txt"
PEERDIR="$SHARED/peers/tok"
only=" ${BENCH_ONLY:-} "
want() { [ "$only" = "  " ] || case "$only" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

[ -f "$CORPUS" ] || { echo "bench: $CORPUS not found" >&2; exit 1; }
bytes=$(stat -c %s "$CORPUS")
mbs() { awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.2f", b / 1e6 / s }'; }

peers_ok=0
npm_peers_ready && peers_ok=1
