#!/usr/bin/env bash
# Golden: the tokenizer.json files nlpipe writes load in HF tokenizers (the npm
# package of shared/peers, when node and /tmp/nlpipe-peers are there; else
# skipped) and encode as nlpipe does:
#   - byte-level and classic (</w>) BPE trained by train-bpe on data/lm/valid.txt
#   - the test fixture with a [CLS] $A [SEP] template (special tokens added)
#   - WordPiece (BERT pipeline) trained by train-wordpiece, both scores, uncased
#     and cased; and a trained vocab.txt read by HF's BERT tokenizer
#   - train-wordpiece --score frequency on the overlap corpus gives one of the
#     token sets HF's WordPiece trainer gives (HF breaks a tie there by ids it
#     assigns in hash order, so its set varies from run to run)
# Prints "N passed, N failed".
set -u
SHARED="${SHARED:-../shared}"
BIN="${NLPIPE_BIN:-bin}"
TOP="$(cd "$(dirname "$0")/../.." && pwd)"
NM="${PEERS_NODE_MODULES:-/tmp/nlpipe-peers/node_modules}"
ENC="$SHARED/peers/tok/hf-encode.js"
if ! command -v node >/dev/null 2>&1 || [ ! -d "$NM/tokenizers" ] || [ ! -f "$ENC" ]; then
  echo "# skipped: node, the HF tokenizers npm package (in $NM) or ../shared/peers not found"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/golden-hfjson.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

in="$SHARED/data/lm/valid.txt"
head -300 "$in" >"$tmp/in.txt"

check() { # name tokenizer.json [tokenize options]
  local name="$1" tok="$2"
  shift 2
  if ! node "$ENC" "$tok" "$tmp/in.txt" "$tmp/hf.ids" 2>"$tmp/hf.err"; then
    bad "$name: HF cannot load it: $(tail -3 "$tmp/hf.err")"
    return
  fi
  "$BIN/tokenize" -m "$tok" "$@" "$tmp/in.txt" >"$tmp/ours.ids"
  if cmp -s "$tmp/hf.ids" "$tmp/ours.ids"; then ok "$name: HF loads it and gives the same ids"; else bad "$name: ids differ"; fi
}

"$BIN/train-bpe" -q --byte-level --vocab-size 2000 "$in" -o "$tmp/byte.json"
check "byte-level BPE" "$tmp/byte.json"
"$BIN/train-bpe" -q --vocab-size 2000 --end-of-word-suffix '</w>' --unk-token '[UNK]' "$in" -o "$tmp/classic.json"
check "classic BPE with </w> and [UNK]" "$tmp/classic.json" --no-special-tokens
# hf-encode.js passes addSpecialTokens: false; the template still sets nothing then
check "template fixture" "$TOP/tests/data/tok/hug-template.json" --no-special-tokens


"$BIN/train-wordpiece" -q --vocab-size 2000 "$in" -o "$tmp/wp.json"
check "WordPiece (likelihood), uncased BERT pipeline" "$tmp/wp.json" --no-special-tokens
"$BIN/train-wordpiece" -q --score frequency --no-lowercase --vocab-size 2000 "$in" -o "$tmp/wpf.json"
check "WordPiece (frequency), cased BERT pipeline" "$tmp/wpf.json" --no-special-tokens
"$BIN/train-wordpiece" -q --vocab-size 2000 --format vocab "$in" -o "$tmp/vocab.txt"
check "a trained vocab.txt in HF's BERT tokenizer" "$tmp/vocab.txt" --no-special-tokens

HFTRAIN="$SHARED/peers/tok/hf-train.js"
ov="$SHARED/vectors/tokenize/train/overlap.corpus.txt"
if [ -f "$ov" ] && [ -f "$HFTRAIN" ]; then
  tokset() { python3 -c 'import json,sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["model"]["vocab"])))' "$1"; }
  "$BIN/train-wordpiece" -q --score frequency --special-tokens '' --min-frequency 0 "$ov" -o "$tmp/ov.json"
  ours="$(tokset "$tmp/ov.json")" seen=0 sets=""
  for i in $(seq 1 16); do
    node "$HFTRAIN" wordpiece "$ov" "$tmp/hfov.json" >/dev/null 2>&1 || break
    h="$(tokset "$tmp/hfov.json")"
    case "$sets" in *"[$h]"*) ;; *) sets="$sets[$h]" ;; esac
    [ "$h" = "$ours" ] && { seen=$i; break; }
  done
  if [ "$seen" -gt 0 ]; then ok "overlap, --score frequency: HF's run $seen gave our token set"; else bad "overlap: our set ($ours) not among HF's: $sets"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
