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

@test "bench: a benchmark whose ../shared data is absent is skipped with the reason; the rest run" {
  printf '# bench: needy\n# needs: data/lm/train.txt\nprintf "needy\\t3\\ts\\n"\n' >"$t/needy.sh"
  rm "$t/bad.sh"
  SHARED="$t/no-shared" bench
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"needy.sh skipped: no $t/no-shared/data/lm/train.txt"* ]]
  [[ "$output" == *fast*1.5*s* ]]
  [[ "$output" == *needy*skipped*"no $t/no-shared/data/lm/train.txt"* ]]
  mkdir -p "$t/shared/data/lm" && : >"$t/shared/data/lm/train.txt"
  SHARED="$t/shared" bench needy
  [ "$status" -eq 0 ]
  [[ "$output" == *needy*3*s* ]]
}

@test "bench: every script that reads ../shared data names it on a '# needs:' line" {
  for s in "$NLPIPE_TOP"/tools/bench/*.sh; do
    grep -q '\$SHARED/data\|\$SHARED/vectors\|CORPUS' "$s" || continue
    grep -q '^# needs: ' "$s" || { echo "$(basename "$s") reads ../shared data but has no '# needs:' line"; false; }
  done
}

@test "bench train.sh: each share of the FMA peak names the matrix kernels that ran" {
  # a stand-in trainbench with fixed figures: the script's arithmetic and labels only
  mkdir -p "$t/tools"
  cat >"$t/tools/trainbench" <<'SH'
#!/bin/sh
case "$1" in
peak) printf 'fp32_fma_peak\t200.0\tGFLOP/s\nfp32_sgemm_peak\t150.0\tGFLOP/s\nfp32_kernels\tavx2\t(ours)\n' ;;
train) printf '%s_train\t1000\ttokens/s\n%s_train_gflops\t50.0\tGFLOP/s\n' "$2" "$2" ;;
esac
SH
  chmod +x "$t/tools/trainbench"
  run_split env NLPIPE_TOOLS="$t/tools" PEERS=0 BENCH_TMP="$t" bash "$NLPIPE_TOP/tools/bench/train.sh"
  [ "$status" -eq 0 ]
  [[ "$output" == *$'gpt_small_train_peak\t25.0\t%FMA(avx2)'* ]] || { echo "$output"; false; }
}
