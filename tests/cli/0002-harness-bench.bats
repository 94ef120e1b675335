#!/usr/bin/env bats
# tools/bench/run (what `make bench [BENCH=name]` calls): a copy runs made-up
# benchmark scripts in a scratch tree, with its own lock file.

load helper

setup() {
  t="$BATS_TEST_TMPDIR/bench"
  mkdir -p "$t"
  sed "s|/tmp/nlpipe-bench.lock|$t/lock|" "$NLPIPE_TOP/tools/bench/run" >"$t/run"
  printf '# bench: fast slow\nprintf "fast\\t1.5\\ts\\nslow\\t9\\ts\\n"\n' >"$t/good.sh"
  printf '# bench: broken\nprintf "broken\\t2\\ts\\n"\nexit 1\n' >"$t/bad.sh"
}

bench() { BENCH_TMP="$t/tmp" PEERS=0 run_split bash "$t/run" "$@"; }

@test "bench: one benchmark by name" {
  bench fast
  [ "$status" -eq 0 ]
  [[ "$output" == *fast*1.5*s* ]]
  [[ "$output" != *broken* ]]
}

@test "bench: a name no script declares is an error, not an empty table" {
  bench fsat
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"no benchmark named 'fsat'"* ]]
}

@test "bench: a benchmark script that fails makes the run fail" {
  bench broken
  [ "$status" -ne 0 ]
  [[ "$stderr" == *"bad.sh failed"* ]]
  bench
  [ "$status" -ne 0 ]
  [[ "$output" == *fast* ]]
}
