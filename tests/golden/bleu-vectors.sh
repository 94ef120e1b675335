#!/usr/bin/env bash
# tests/golden/bleu-vectors.sh — bleu against sacreBLEU 2.5.1's reference vectors
# ($SHARED/vectors/bleu): every case's score(s) within 1e-9 relative through the
# shared bleu-compare.sh (METRICS=all, API-only options included), then every
# case's text and JSON output byte for byte (tests/golden/bleu-format.py).
# Prints `N passed, N failed` last; skips cleanly without $SHARED.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
SHARED="${SHARED:-$here/../../../shared}"
BIN="${NLPIPE_BIN:-$here/../../bin}"
if [ ! -x "$SHARED/vectors/bleu-compare.sh" ]; then
  echo "# skipped: no shared vectors at '$SHARED'"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
scores="$(METRICS=all "$SHARED/vectors/bleu-compare.sh" "$BIN/bleu {refs} -i {hyp} {args} -b -w 30" 2>&1)"
printf '%s\n' "$scores" | grep -v '^[0-9]* passed, [0-9]* failed$' | sed 's/^/scores: /'
sp=$(printf '%s\n' "$scores" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' | tail -1)
sf=$(printf '%s\n' "$scores" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' | tail -1)
echo "scores: ${sp:-0} passed, ${sf:-1} failed"
py=/usr/bin/python3; [ -x "$py" ] || py="$(command -v python3 || true)"
fp=0 ff=0
if [ -n "$py" ]; then
  formats="$("$py" "$here/bleu-format.py" "$BIN/bleu" "$SHARED/vectors/bleu" 2>&1)"
  printf '%s\n' "$formats" | grep -v '^[0-9]* passed, [0-9]* failed$' | sed 's/^/format: /'
  fp=$(printf '%s\n' "$formats" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' | tail -1)
  ff=$(printf '%s\n' "$formats" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' | tail -1)
  echo "format: ${fp:-0} passed, ${ff:-1} failed"
else
  echo "# skipped format: python3 not found (it renders sacreBLEU's expected JSON)"
fi
echo "$(( ${sp:-0} + ${fp:-0} )) passed, $(( ${sf:-1} + ${ff:-0} )) failed"
[ "${sf:-1}" -eq 0 ] && [ "${ff:-0}" -eq 0 ]
