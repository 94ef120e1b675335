#!/usr/bin/env bats
# tests/run's tally: the final `N passed, N failed` line counts only what
# passed. A copy of tests/run runs in a scratch tree of made-up tests.

load helper

setup() {
  t="$BATS_TEST_TMPDIR/tree"
  mkdir -p "$t/tests/cli" "$t/tests/golden" "$t/units"
  cp "$NLPIPE_TOP/tests/run" "$t/tests/run"
}

tally() { NLPIPE_UNITS="$t/units" run "$t/tests/run"; }

@test "tests/run: a skipped bats test is not counted as passed" {
  printf '@test "runs" { true; }\n@test "skips" { skip "not here"; }\n' >"$t/tests/cli/x.bats"
  tally
  [ "$status" -eq 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "1 passed, 0 failed" ]
  [[ "$output" == *"1 skipped"* ]]
}

@test "tests/run: a unit program that crashes after its summary, or prints none, fails" {
  printf '#!/bin/sh\necho "# a: 3 passed, 0 failed"\nkill -SEGV $$\n' >"$t/units/test_a"
  printf '#!/bin/sh\necho "starting"\nexit 0\n' >"$t/units/test_b"
  chmod +x "$t/units/test_a" "$t/units/test_b"
  tally
  [ "$status" -ne 0 ]
  [ "${lines[${#lines[@]} - 1]}" = "3 passed, 2 failed" ]
}

@test "tests/run: a bats file with a syntax error fails" {
  printf '@test "a" { true; }\n@test "b" {\n  if true; then\n}\n' >"$t/tests/cli/y.bats"
  tally
  [ "$status" -ne 0 ]
  [[ "${lines[${#lines[@]} - 1]}" == *" passed, "[1-9]*" failed" ]]
}
