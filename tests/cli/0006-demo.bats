#!/usr/bin/env bats
# make demo (tools/demo): it runs from the repository alone, and the
# byte-level pieces it prints are explained and shown as the text they stand for.

load helper

@test "demo: runs, and its byte-level pieces are explained and decoded piece by piece" {
  run_split env NLPIPE_BIN="$NLPIPE_BIN" "$NLPIPE_TOP/tools/demo"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"Ġ is a space"* ]]
  line="$(grep '^as text: ' <<<"$output")"
  # the pieces joined give the sentence back; a piece holding part of a character shows its bytes
  [[ "$line" == "as text: [Die]"* ]]
  [[ "$line" == *"<C3>"* ]]
  [[ "$output" == *"(byte-exact round trip)"* ]]
}
