#!/usr/bin/env bash
# Golden: `tokenize -m bert-base-uncased --no-special-tokens` on every row of
# vectors/tokenize/bert-uncased.jsonl (the exact input bytes as hex; ids and
# tokens of HF tokenizers' BERT), through the command line: always with the
# compact copy in tests/data/golden (the same rows; a tokenizer.json of
# bert-base-uncased's pipeline holding the tokens they need, with their ids),
# and with ../shared also with the published vocab.txt. Rows
# go through as lines, except those holding a newline or carriage return,
# which go through as NUL-terminated records (-z); no row holds both.
#   - ids identical, with 1 and 2 threads; and equal to bert-uncased.tsv's ids
#   - pieces identical to the tokens (and to the tsv's tokens column)
#   - the invalid-UTF-8 rows are among them (repaired to U+FFFD, which BERT
#     deletes), with one warning; --strict names line and byte
#   - with the template: [CLS] ids [SEP] on every row
# Prints "N passed, N failed[, N skipped]".
set -u
SHARED="${SHARED:-../shared}"
BIN="${NLPIPE_BIN:-bin}"
TOP="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/golden-bert.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); echo "ok   [$set] $1"; }
bad() { fail=$((fail + 1)); echo "FAIL [$set] $1"; }
zflag() { [ "$1" = z ] && echo -z; }

# the checks on the rows of directory V with the tokenizer VOCAB
run_set() {
  set="$1" V="$2" VOCAB="$3"
  python3 "$(dirname "$0")/split-rows.py" "$V/bert-uncased.jsonl" "$tmp" 101 102 || { bad "cannot split the rows"; return; }

  for m in lf z; do
    "$BIN/tokenize" -m "$VOCAB" --no-special-tokens $(zflag $m) -t 1 "$tmp/in.$m" >"$tmp/got.$m" 2>"$tmp/err.$m"
    if cmp -s "$tmp/got.$m" "$tmp/ids.$m"; then ok "ids ($m records, 1 thread)"; else bad "ids differ ($m records)"; fi
    "$BIN/tokenize" -m "$VOCAB" --no-special-tokens $(zflag $m) -t 2 -B 16 "$tmp/in.$m" >"$tmp/got2.$m" 2>/dev/null
    if cmp -s "$tmp/got2.$m" "$tmp/ids.$m"; then ok "ids ($m records, 2 threads, batches of 16)"; else bad "ids differ ($m, 2 threads)"; fi
    "$BIN/tokenize" -m "$VOCAB" --no-special-tokens $(zflag $m) --output-format piece "$tmp/in.$m" >"$tmp/pgot.$m" 2>/dev/null
    if cmp -s "$tmp/pgot.$m" "$tmp/pieces.$m"; then ok "pieces equal the tokens ($m)"; else bad "pieces differ ($m)"; fi
    "$BIN/tokenize" -m "$VOCAB" $(zflag $m) "$tmp/in.$m" >"$tmp/cgot.$m" 2>/dev/null
    if cmp -s "$tmp/cgot.$m" "$tmp/cls.$m"; then ok "[CLS] ids [SEP] with the template ($m)"; else bad "template ($m)"; fi
  done

  n=$(( $(tr -cd '\n' <"$tmp/ids.lf" | wc -c) + $(tr -cd '\0' <"$tmp/ids.z" | wc -c) ))
  if [ "$n" -eq "$(cat "$tmp/nrows")" ]; then ok "all $n rows compared"; else bad "compared $n of $(cat "$tmp/nrows") rows"; fi

  # bert-uncased.tsv's ids and tokens columns are the same reference
  if [ ! -f "$V/bert-uncased.tsv" ]; then :
  elif [ "$(cut -f2 "$V/bert-uncased.tsv" | sort | md5sum)" = "$( { cat "$tmp/got.lf"; tr '\0' '\n' <"$tmp/got.z"; } | sort | md5sum)" ]; then
    ok "ids equal bert-uncased.tsv's"
  else
    bad "ids differ from bert-uncased.tsv's"
  fi
  if [ ! -f "$V/bert-uncased.tsv" ]; then :
  elif [ "$(cut -f3 "$V/bert-uncased.tsv" | sort | md5sum)" = "$( { cat "$tmp/pgot.lf"; tr '\0' '\n' <"$tmp/pgot.z"; } | sort | md5sum)" ]; then
    ok "tokens equal bert-uncased.tsv's"
  else
    bad "tokens differ from bert-uncased.tsv's"
  fi

  ninv=$(cat "$tmp/ninvalid")
  if [ "$ninv" -eq "$(grep -c . "$V/invalid-utf8-rows.txt")" ] && grep -q "replaced .* invalid UTF-8 sequences" "$tmp/err.lf" &&
     [ "$(grep -c warning "$tmp/err.lf")" -eq 1 ]; then
    ok "the $ninv invalid-UTF-8 rows match, with one warning"
  else
    bad "invalid UTF-8 rows: $ninv, warning: $(cat "$tmp/err.lf")"
  fi

  if "$BIN/tokenize" -m "$VOCAB" --strict "$tmp/in.lf" >/dev/null 2>"$tmp/strict"; then
    bad "--strict accepted invalid UTF-8"
  elif grep -q "line [0-9]* byte [0-9]*: invalid UTF-8" "$tmp/strict"; then
    ok "--strict names line and byte: $(cat "$tmp/strict")"
  else
    bad "--strict message: $(cat "$tmp/strict")"
  fi

}

run_set repo "$TOP/tests/data/golden/vectors/tokenize" "$TOP/tests/data/golden/vectors/tokenize/bert-base-uncased.json"
if [ -f "$SHARED/vectors/tokenize/bert-uncased.jsonl" ]; then
  run_set shared "$SHARED/vectors/tokenize" "$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt"
else
  echo "# skipped the published vocab.txt: no '$SHARED/vectors/tokenize' (../shared); the compact copy ran"
  skip=1
fi
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ "$fail" -eq 0 ]
