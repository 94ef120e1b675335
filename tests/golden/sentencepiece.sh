#!/usr/bin/env bash
# Golden: sentencepiece models read and run as sentencepiece 0.1.97 runs
# them, and their tokenizer.json forms as HF tokenizers 0.23.2 runs them.
#
# Always (tests/data/spm, made by its make.sh with spm_train/spm_encode/
# spm_decode and HF's Node binding; no sentencepiece or node needed here):
#   - for 8 models (unigram, bpe, char, word; nmt_nfkc, identity and a
#     custom rule table; byte fallback; user-defined and control symbols;
#     no dummy prefix, whitespace as suffix, a denormalizer): ids with 1 and with 2
#     threads, pieces, and decoding equal to spm_encode's and spm_decode's
#     on input.txt (335 lines, a third of them stress lines), and decoding of
#     random id sequences equal to spm_decode's
#   - each model written as tokenizer.json (tools/tokconv: HF's view plus
#     the model) gives the same ids again
#   - three tokenizer.json files in the shapes HF's converters gave LLaMA,
#     T5 and Metaspace "first" models: ids and decoding equal to HF's
# With spm_encode (apt-get install sentencepiece) and ../shared:
#   - the twins' spm8k.model and the committed 1k models on 60,000 lines of
#     ../shared/data (20,000 each of lm/train.txt, parallel/en-de/train.en
#     and train.de, from their ends): ids equal to spm_encode's; pieces and
#     decoding on 6,000 of them
# With node and the npm peer (../shared/peers/README.md):
#   - the HF view of each committed model (tools/tokconv --hf-only):
#     nlpipe's ids equal HF's on input.txt and decoding on its ids
# Under `make asan` the 60,000 lines are 6,000. Prints "N passed, N failed[, N skipped]".
set -u
SHARED="${SHARED:-../shared}"
BIN="${NLPIPE_BIN:-bin}" TOOLS="${NLPIPE_TOOLS:-tools}"
TOP="$(cd "$(dirname "$0")/../.." && pwd)"
S="$TOP/tests/data/spm"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/golden-spm.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
same() { # what expected got
  if cmp -s "$2" "$3"; then ok "$1"
  else bad "$1: $(diff "$2" "$3" | grep -c '^<') lines differ: $(diff "$2" "$3" | head -3 | tr '\n' ' ' | cut -c1-240)"; fi
}
nul() { tr '\n' '\0' <"$1"; } # ids as NUL-ended records, for tokenize -d -z

models="uni-nfkc uni-id-bf bpe-id-bf bpe-rules uni-rules char-id word-id den-id"
for m in $models; do
  M="$S/$m.model"
  "$BIN/tokenize" -t 1 -m "$M" "$S/input.txt" >"$tmp/$m.ids" 2>"$tmp/err"
  same "$m: ids = spm_encode's (1 thread)" "$S/$m.ids" "$tmp/$m.ids"
  "$BIN/tokenize" -t 2 -B 7 -m "$M" "$S/input.txt" >"$tmp/$m.ids2" 2>/dev/null
  same "$m: ids = spm_encode's (2 threads, batches of 7)" "$S/$m.ids" "$tmp/$m.ids2"
  "$BIN/tokenize" -m "$M" --output-format piece "$S/input.txt" >"$tmp/$m.pieces" 2>/dev/null
  same "$m: pieces = spm_encode's" "$S/$m.pieces" "$tmp/$m.pieces"
  "$BIN/tokenize" -m "$M" -d "$S/$m.ids" >"$tmp/$m.dec"
  same "$m: decoding = spm_decode's" "$S/$m.dec" "$tmp/$m.dec"
  "$BIN/tokenize" -m "$M" -d "$S/rand.ids" >"$tmp/$m.rdec"
  same "$m: decoding of random ids = spm_decode's" "$S/$m.rand.dec" "$tmp/$m.rdec"
  if "$TOOLS/tokconv" "$M" "$tmp/$m.json"; then
    "$BIN/tokenize" -m "$tmp/$m.json" "$S/input.txt" >"$tmp/$m.jids" 2>/dev/null
    same "$m: as tokenizer.json (HF's view + the model): the same ids" "$S/$m.ids" "$tmp/$m.jids"
  else
    bad "$m: tools/tokconv failed"
  fi
done
if grep -q "replaced .* invalid UTF-8" "$tmp/err"; then ok "ill-formed UTF-8 in the input is named once"; else bad "no warning: $(cat "$tmp/err")"; fi

for f in bpe-id-bf.llama uni-id-bf.first uni-rules.t5; do
  "$BIN/tokenize" -m "$S/$f.json" "$S/input.txt" >"$tmp/$f.ids" 2>/dev/null
  same "$f.json: ids = HF tokenizers'" "$S/$f.hf.ids" "$tmp/$f.ids"
  nul "$S/$f.hf.ids" | "$BIN/tokenize" -m "$S/$f.json" -d -z >"$tmp/$f.dec"
  same "$f.json: decoding = HF tokenizers'" "$S/$f.hf.dec" "$tmp/$f.dec"
done

# --- live: spm_encode on ../shared/data
if ! command -v spm_encode >/dev/null || ! command -v spm_decode >/dev/null; then
  skip=$((skip + 1)); echo "# skipped 60,000 lines against spm_encode: spm_encode not found (apt-get install sentencepiece)"
elif [ ! -f "$SHARED/data/lm/train.txt" ] || [ ! -f "$SHARED/peers/twins/spm8k.model" ]; then
  skip=$((skip + 1)); echo "# skipped 60,000 lines against spm_encode: no '$SHARED/data' or '$SHARED/peers/twins' (../shared)"
else
  k=20000
  [ "${NLPIPE_ASAN:-0}" = 1 ] && k=2000
  D="$SHARED/data"
  { tail -n $k "$D/lm/train.txt"; tail -n $k "$D/parallel/en-de/train.en"; tail -n $k "$D/parallel/en-de/train.de"; } >"$tmp/big.txt"
  awk 'NR % 10 == 1' "$tmp/big.txt" >"$tmp/small.txt"
  n=$(wc -l <"$tmp/big.txt") ns=$(wc -l <"$tmp/small.txt")
  for M in "$SHARED/peers/twins/spm8k.model" "$S/uni-nfkc.model" "$S/bpe-id-bf.model" "$S/uni-id-bf.model"; do
    m=$(basename "$M" .model)
    spm_encode --model="$M" --output_format=id <"$tmp/big.txt" >"$tmp/ref.ids"
    "$BIN/tokenize" -t 2 -m "$M" "$tmp/big.txt" >"$tmp/got.ids" 2>/dev/null
    same "$m: ids = spm_encode's on $n lines of ../shared/data" "$tmp/ref.ids" "$tmp/got.ids"
    spm_encode --model="$M" --output_format=piece <"$tmp/small.txt" >"$tmp/ref.pieces"
    "$BIN/tokenize" -m "$M" --output-format piece "$tmp/small.txt" >"$tmp/got.pieces" 2>/dev/null
    same "$m: pieces = spm_encode's on $ns lines" "$tmp/ref.pieces" "$tmp/got.pieces"
    spm_encode --model="$M" --output_format=id <"$tmp/small.txt" >"$tmp/ref.sids"
    spm_decode --model="$M" --input_format=id <"$tmp/ref.sids" >"$tmp/ref.dec"
    "$BIN/tokenize" -m "$M" -d "$tmp/ref.sids" >"$tmp/got.dec"
    same "$m: decoding = spm_decode's on $ns lines" "$tmp/ref.dec" "$tmp/got.dec"
  done
fi

# --- live: HF tokenizers on HF's view of each model
NM="${PEERS_NODE_MODULES:-/tmp/nlpipe-peers/node_modules}"
ENC="$SHARED/peers/tok/hf-encode.js"
if ! command -v node >/dev/null || [ ! -d "$NM/tokenizers" ] || [ ! -f "$ENC" ]; then
  skip=$((skip + 1)); echo "# skipped HF's view against HF tokenizers: node, the npm peer (in $NM) or ../shared/peers not found"
else
  for m in $models; do
    case $m in char-id|word-id) continue ;; esac # HF has no such models: its view is an approximation
    "$TOOLS/tokconv" --hf-only "$S/$m.model" "$tmp/$m.hf.json" || { bad "$m: tokconv --hf-only failed"; continue; }
    PEERS_NODE_MODULES="$NM" node "$ENC" "$tmp/$m.hf.json" "$S/input.txt" "$tmp/$m.hf.ids" 2>/dev/null
    "$BIN/tokenize" -m "$tmp/$m.hf.json" "$S/input.txt" >"$tmp/$m.hf.got" 2>/dev/null
    same "$m: HF's view: ids = HF tokenizers'" "$tmp/$m.hf.ids" "$tmp/$m.hf.got"
    PEERS_NODE_MODULES="$NM" node "$S/hf-decode.js" "$tmp/$m.hf.json" "$tmp/$m.hf.ids" >"$tmp/$m.hf.dec"
    nul "$tmp/$m.hf.ids" | "$BIN/tokenize" -m "$tmp/$m.hf.json" -d -z >"$tmp/$m.hf.gdec"
    same "$m: HF's view: decoding = HF tokenizers'" "$tmp/$m.hf.dec" "$tmp/$m.hf.gdec"
  done
fi
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ "$fail" -eq 0 ]
