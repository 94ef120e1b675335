#!/usr/bin/env bats
# tests/run's tally: the final `N passed, N failed, N skipped` line counts
# only what passed as passed, and every skipped suite is listed once with its
# reason. A copy of tests/run runs in a scratch tree of made-up tests.

load helper

setup() {
  t="$BATS_TEST_TMPDIR/tree"
  mkdir -p "$t/tests/cli" "$t/tests/golden" "$t/units"
  cp "$NLPIPE_TOP/tests/run" "$t/tests/run"
}

tally() { ONLY= NLPIPE_UNITS="$t/units" run "$t/tests/run"; }

@test "tests/run: a skipped bats test is not counted as passed" {
  printf '@test "runs" { true; }\n@test "skips" { skip "not here"; }\n' >"$t/tests/cli/x.bats"
  tally
  [ "$status" -eq 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "1 passed, 0 failed, 1 skipped" ]
  [[ "$output" == *"ok   cli/x.bats: 1 passed, 0 failed, 1 skipped ["[0-9]*" s]"* ]]
}

@test "tests/run: each skipped suite is listed once with its reason, from units, golden suites and bats" {
  printf '@test "a" { skip "no data here"; }\n@test "b" { skip "no data here"; }\n@test "c" { skip "other"; }\n' >"$t/tests/cli/x.bats"
  printf '#!/bin/sh\necho "# skipped t1: needs X"\necho "# skipped t2: needs X"\necho "# u: 5 passed, 0 failed, 2 skipped"\n' >"$t/units/test_u"
  chmod +x "$t/units/test_u"
  printf 'echo "# skipped: no fixtures at /nowhere"\necho "0 passed, 0 failed, 1 skipped"\n' >"$t/tests/golden/g.sh"
  tally
  [ "$status" -eq 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "5 passed, 0 failed, 6 skipped" ]
  [[ "$output" == *"  cli/x.bats: no data here (2)"* ]]
  [[ "$output" == *"  cli/x.bats: other (1)"* ]]
  [[ "$output" == *"  unit/test_u: needs X (2)"* ]]
  [[ "$output" == *"  golden/g: no fixtures at /nowhere (1)"* ]]
  [ "$(grep -c 'no data here' <<<"$output")" -eq 1 ]
}

@test "tests/run: a unit program that crashes after its summary, or prints none, fails" {
  printf '#!/bin/sh\necho "# a: 3 passed, 0 failed"\nkill -SEGV $$\n' >"$t/units/test_a"
  printf '#!/bin/sh\necho "starting"\nexit 0\n' >"$t/units/test_b"
  chmod +x "$t/units/test_a" "$t/units/test_b"
  tally
  [ "$status" -ne 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "3 passed, 2 failed, 0 skipped" ]
}

@test "tests/run: a bats file with a syntax error fails" {
  printf '@test "a" { true; }\n@test "b" {\n  if true; then\n}\n' >"$t/tests/cli/y.bats"
  tally
  [ "$status" -ne 0 ]
  [[ "${lines[${#lines[@]} - 1]}" == *" passed, "[1-9]*" failed, "*" skipped" ]]
}

@test "make asan: undefined behaviour exits 86 like an ASan error, not 1 like a tool's failure" {
  [ "${NLPIPE_ASAN:-}" = 1 ] || skip "only under make asan"
  # a test that expects exit 1 (bad input) must not pass because of a UBSan abort
  printf '#include <limits.h>\n#include <stdlib.h>\nint main(int c, char **v) { int x = INT_MAX - 1 + c; x += atoi(v[1]); return x & 1; }\n' >"$BATS_TEST_TMPDIR/ub.c"
  cc -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined "$BATS_TEST_TMPDIR/ub.c" -o "$BATS_TEST_TMPDIR/ub"
  run_split "$BATS_TEST_TMPDIR/ub" 5
  [[ "$stderr" == *"runtime error"* ]]
  [ "$status" -eq 86 ]
}
