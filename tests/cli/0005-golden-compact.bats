#!/usr/bin/env bats
# A clone without ../shared proves its claims: the compact golden set of
# tests/data/golden makes every golden suite check something, and stays small.

load helper

@test "golden suites without ../shared: each checks the compact set (some passed, none failed) and says what it skipped" {
  for g in bleu-vectors parity tokenize-bert tokenize-gpt2; do
    run_split env SHARED="$BATS_TEST_TMPDIR/no-shared" bash "$NLPIPE_TOP/tests/golden/$g.sh"
    [ "$status" -eq 0 ] || { echo "$g: exit $status"; printf '%s\n' "$output" | grep -v '^ok' | head; false; }
    last="${lines[${#lines[@]} - 1]}"
    [[ "$last" =~ ^([1-9][0-9]*)\ passed,\ 0\ failed,\ 1\ skipped$ ]] || { echo "$g: $last"; false; }
    [[ "$output" == *"# skipped "*"no-shared"* ]] || { echo "$g: no reason"; false; }
  done
}

@test "tests/data/golden: well under 1 MB, and its README names the source of every file" {
  [ "$(find "$NLPIPE_TOP/tests/data/golden" -type f -printf "%s\n" | awk "{ s += \$1 } END { print s }")" -lt 800000 ]
  for f in gpt2.jsonl bert-uncased.jsonl encoder.json vocab.bpe bert-base-uncased.json ref.safetensors model.safetensors; do
    grep -q "$f" "$NLPIPE_TOP/tests/data/golden/README.md" || { echo "README.md does not mention $f"; false; }
  done
}
