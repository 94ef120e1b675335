#!/usr/bin/env bats
# The Makefile's own behaviour: quiet by default (one short line per step, as
# kernel-style Makefiles print), the full commands with V=1. One object is
# built into a scratch BUILD directory.

load helper

@test "make: one short line per step by default, the full command with V=1" {
  b="$BATS_TEST_TMPDIR/build"
  mkdir -p "$b" && touch "$b/.deps-ok"
  run make -C "$NLPIPE_TOP" --no-print-directory BUILD="$b" "$b/lib/base/err.o"
  [ "$status" -eq 0 ]
  [ "$output" = "  CC      lib/base/err.c" ] || { echo "quiet build printed: $output"; false; }
  rm -f "$b/lib/base/err.o"
  run make -C "$NLPIPE_TOP" --no-print-directory BUILD="$b" V=1 "$b/lib/base/err.o"
  [ "$status" -eq 0 ]
  [[ "$output" == *" -c lib/base/err.c -o $b/lib/base/err.o"* ]] || { echo "V=1 printed: $output"; false; }
  [[ "$output" != *"  CC      "* ]]
}
