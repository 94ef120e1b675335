# tools/bench/peers.bash — sourced by the tokenizer benchmarks (not a benchmark:
# tools/bench/run runs *.sh only).
#
# npm_peers_ready: 0 when the Node peers of shared/peers/tok can run (node, and
# HF tokenizers 0.23.2 + tiktoken 1.0.22 in /tmp/nlpipe-peers, installed here
# when missing and npm works), 1 otherwise or when PEERS=0; says why on stderr.
# median: the median of the numbers on standard input.
NM=/tmp/nlpipe-peers/node_modules

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
