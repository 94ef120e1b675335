#!/usr/bin/env bash
# tests/golden/bleu-vectors.sh — bleu against sacreBLEU 2.5.1's reference vectors:
#   - always: the compact copy in tests/data/golden/vectors/bleu (a few dozen
#     cases: every tokenizer, smoothing and metric, sentence level, several
#     references, the traps): every case's score(s) within 1e-9 relative
#     (tests/golden/bleu-scores.py), then its text and JSON output byte for
#     byte (tests/golden/bleu-format.py);
#   - with ../shared: every case of $SHARED/vectors/bleu, the scores through
#     the shared bleu-compare.sh (METRICS=all, API-only options included),
#     then the text and JSON output byte for byte.
# Prints `N passed, N failed[, N skipped]` last.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
SHARED="${SHARED:-$here/../../../shared}"
BIN="${NLPIPE_BIN:-$here/../../bin}"
py=/usr/bin/python3; [ -x "$py" ] || py="$(command -v python3 || true)"
if [ -z "$py" ]; then
  echo "# skipped: python3 not found (it reads sacreBLEU's expected JSON)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
P=0 F=0 S=0
# add the last "N passed, N failed" of $2 (the output of check $1) to the totals
add() {
  local p f
  printf '%s\n' "$2" | grep -v '^[0-9]* passed, [0-9]* failed$' | sed "s/^/$1: /"
  p=$(printf '%s\n' "$2" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' | tail -1)
  f=$(printf '%s\n' "$2" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' | tail -1)
  echo "$1: ${p:-0} passed, ${f:-1} failed"
  P=$((P + ${p:-0})) F=$((F + ${f:-1}))
}

repo="$here/../data/golden/vectors/bleu"
add "repo scores" "$("$py" "$here/bleu-scores.py" "$BIN/bleu" "$repo" 2>&1)"
add "repo format" "$("$py" "$here/bleu-format.py" "$BIN/bleu" "$repo" 2>&1)"

if [ -x "$SHARED/vectors/bleu-compare.sh" ]; then
  add "shared scores" "$(METRICS=all "$SHARED/vectors/bleu-compare.sh" "$BIN/bleu {refs} -i {hyp} {args} -b -w 30" 2>&1)"
  add "shared format" "$("$py" "$here/bleu-format.py" "$BIN/bleu" "$SHARED/vectors/bleu" 2>&1)"
else
  echo "# skipped the full set: no '$SHARED/vectors' (../shared); the compact copy ran"
  S=1
fi
echo "$P passed, $F failed$([ $S -gt 0 ] && echo ", $S skipped")"
[ "$F" -eq 0 ]
