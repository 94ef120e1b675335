#!/usr/bin/env bats
# The README's commands still run: every fenced block that follows a line
# `<!-- doctest -->` is run, in the order of the README, in one scratch
# directory where `tools` is the repository's (so `tools/demo-data/...` and
# `tools/plot-log` work as they do from a clone) and the tools are on PATH, as
# the README's set-up says. A block fails the test with its text and output.
# The blocks are kept small (embedded data, a few training steps).

load helper

# the doctest blocks of a markdown file, each ended by a line '#@end'
blocks() {
  awk '
    /^<!-- doctest -->$/ { want = 1; next }
    want && /^```/ && !inside { inside = 1; next }
    inside && /^```/ { print "#@end"; inside = 0; want = 0; next }
    inside { print }
    !inside && !/^[[:space:]]*$/ { want = 0 }' "$1"
}

@test "README: the blocks marked doctest run as written" {
  [ -z "${NLPIPE_ASAN:-}" ] || skip "the README's commands run in make test, not under make asan"
  command -v gnuplot >/dev/null || skip "gnuplot not installed (tools/install-deps installs it)"
  d="$BATS_TEST_TMPDIR/readme"
  mkdir -p "$d" && ln -s "$NLPIPE_TOP/tools" "$d/tools"
  blocks "$NLPIPE_TOP/README.md" >"$d/blocks"
  n=$(grep -c '^#@end$' "$d/blocks" || true)
  [ "$n" -ge 4 ] || { echo "only $n doctest blocks in README.md"; false; }
  i=0 text=""
  while IFS= read -r line; do
    if [ "$line" = "#@end" ]; then
      i=$((i + 1))
      printf '%s\n' "$text" >"$d/block$i.sh"
      if ! (cd "$d" && PATH="$NLPIPE_BIN:$PATH" bash -eo pipefail "block$i.sh") >"$d/out$i" 2>&1; then
        printf 'README doctest block %d failed:\n%s\n--- its output:\n' "$i" "$text"; tail -20 "$d/out$i"; false
      fi
      text=""
    else
      text+="$line"$'\n'
    fi
  done <"$d/blocks"
  [ "$i" -eq "$n" ]
}

@test "README: the doctest extractor finds a marked block and skips an unmarked one" {
  f="$BATS_TEST_TMPDIR/r.md"
  printf '%s\n' 'text' '<!-- doctest -->' '```sh' 'echo one' '```' '```sh' 'echo two' '```' >"$f"
  [ "$(blocks "$f")" = "$(printf 'echo one\n#@end')" ]
}
