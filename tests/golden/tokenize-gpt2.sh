#!/usr/bin/env bash
# Golden: `tokenize -m gpt2/` on every row of vectors/tokenize/gpt2.jsonl
# (the exact input bytes as hex; ids and tokens that HF tokenizers, tiktoken,
# js-tiktoken and gpt-3-encoder agree on), through the command line: always
# with the compact copy in tests/data/golden (the same rows; GPT-2's merges
# that build their tokens, with their ids), and with ../shared also with
# GPT-2's whole vocabulary. Rows go through as lines, except those holding a
# newline or carriage return, which go through as NUL-terminated records
# (-z); no row holds both.
#   - ids identical, with 1 and 2 threads; and equal to gpt2.tsv's ids
#   - pieces identical to the tokens
#   - decode(encode(x)) == x byte for byte for every valid UTF-8 row
#   - one warning for the invalid-UTF-8 rows; --strict names line and byte
# Prints "N passed, N failed[, N skipped]".
set -u
SHARED="${SHARED:-../shared}"
BIN="${NLPIPE_BIN:-bin}"
TOP="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/golden-gpt2.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT


cat >"$tmp/roundtrip.py" <<'PY'
import sys
d, m = sys.argv[1], sys.argv[2]
sep = b'\0' if m == 'z' else b'\n'
src = open(d + '/in.' + m, 'rb').read().split(sep)[:-1]
back = open(d + '/back.' + m, 'rb').read().split(sep)[:-1]
valid = [int(x) for x in open(d + '/valid.' + m).read().split()]
bad = [i for i, v in enumerate(valid) if v and src[i] != back[i]]
if len(back) != len(src) or bad:
    print('rows not round-tripped:', bad[:10], len(back), len(src))
    sys.exit(1)
PY

pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "ok   [$set] $1"; }
bad() { fail=$((fail + 1)); echo "FAIL [$set] $1"; }
zflag() { [ "$1" = z ] && echo -z; }

# the checks on the set in directory V (its gpt2/, gpt2.jsonl, ...)
run_set() {
  set="$1" V="$2"
  python3 "$(dirname "$0")/split-rows.py" "$V/gpt2.jsonl" "$tmp" || { bad "cannot split $V/gpt2.jsonl"; return; }

  for m in lf z; do
    "$BIN/tokenize" -m "$V/gpt2" $(zflag $m) -t 1 "$tmp/in.$m" >"$tmp/got.$m" 2>"$tmp/err.$m"
    if cmp -s "$tmp/got.$m" "$tmp/ids.$m"; then ok "ids ($m records, 1 thread)"; else bad "ids differ ($m records)"; fi
    "$BIN/tokenize" -m "$V/gpt2" $(zflag $m) -t 2 -B 16 "$tmp/in.$m" >"$tmp/got2.$m" 2>/dev/null
    if cmp -s "$tmp/got2.$m" "$tmp/ids.$m"; then ok "ids ($m records, 2 threads, batches of 16)"; else bad "ids differ ($m, 2 threads)"; fi
    "$BIN/tokenize" -m "$V/gpt2" $(zflag $m) --output-format piece "$tmp/in.$m" >"$tmp/pgot.$m" 2>/dev/null
    if cmp -s "$tmp/pgot.$m" "$tmp/pieces.$m"; then ok "pieces equal the tokens ($m)"; else bad "pieces differ ($m)"; fi
    "$BIN/tokenize" -m "$V/gpt2" $(zflag $m) -d "$tmp/got.$m" >"$tmp/back.$m"
    if python3 "$tmp/roundtrip.py" "$tmp" "$m"; then ok "decode(encode(x)) == x for every valid row ($m)"; else bad "round trip ($m)"; fi
  done

  n=$(( $(tr -cd '\n' <"$tmp/ids.lf" | wc -c) + $(tr -cd '\0' <"$tmp/ids.z" | wc -c) ))
  if [ "$n" -eq "$(cat "$tmp/nrows")" ]; then ok "all $n rows compared"; else bad "compared $n of $(cat "$tmp/nrows") rows"; fi

  # gpt2.tsv's ids column is the same reference (its rows are escaped text)
  if [ ! -f "$V/gpt2.tsv" ]; then :
  elif [ "$(cut -f2 "$V/gpt2.tsv" | sort | md5sum)" = "$( { cat "$tmp/got.lf"; tr '\0' '\n' <"$tmp/got.z"; } | sort | md5sum)" ]; then
    ok "ids equal gpt2.tsv's"
  else
    bad "ids differ from gpt2.tsv's"
  fi

  if grep -q "replaced .* invalid UTF-8 sequences" "$tmp/err.lf" && [ "$(grep -c warning "$tmp/err.lf")" -eq 1 ]; then
    ok "one warning for the $(grep -c . "$V/invalid-utf8-rows.txt") invalid rows"
  else
    bad "invalid UTF-8 warning: $(cat "$tmp/err.lf")"
  fi

  if "$BIN/tokenize" -m "$V/gpt2" --strict "$tmp/in.lf" >/dev/null 2>"$tmp/strict"; then
    bad "--strict accepted invalid UTF-8"
  elif grep -q "line [0-9]* byte [0-9]*: invalid UTF-8" "$tmp/strict"; then
    ok "--strict names line and byte: $(cat "$tmp/strict")"
  else
    bad "--strict message: $(cat "$tmp/strict")"
  fi

}

run_set repo "$TOP/tests/data/golden/vectors/tokenize"
if [ -f "$SHARED/vectors/tokenize/gpt2.jsonl" ]; then
  run_set shared "$SHARED/vectors/tokenize"
else
  echo "# skipped GPT-2's whole vocabulary: no '$SHARED/vectors/tokenize' (../shared); the compact copy ran"
  skip=1
fi
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ "$fail" -eq 0 ]
