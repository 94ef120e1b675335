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

@test "bench: the raw results are saved under a header saying when, where and how" {
  BENCH_SAVE="$t/saved.tsv" bench fast
  [ "$status" -eq 0 ]
  for k in date cpu kernels commit command env; do grep -q "^# $k"$'\t' "$t/saved.tsv" || { echo "no $k"; cat "$t/saved.tsv"; false; }; done
  grep -q $'^# command\tmake bench BENCH="fast"$' "$t/saved.tsv"
  grep -q $'^fast\t1.5\ts$' "$t/saved.tsv"
  [[ "$stderr" == *"tools/bench/report $t/saved.tsv"* ]]
}

# tools/bench/report on a scratch history and results document
report() { BENCH_HISTORY="$t/history.tsv" BENCH_RESULTS="$t/RESULTS.md" run_split bash "$NLPIPE_TOP/tools/bench/report" "$@"; }
saved() { # FILE DATE: a saved run with ours and two peers
  printf '# date\t%s\n# cpu\tSome CPU, 2 cores\n# kernels\tfp32 avx2, bf16 none\n# commit\tabc1234\n# command\tmake bench BENCH="enc fit"\n# env\t\n' "$2" >"$1"
  printf 'enc\t30\tMB/s\nenc@tiktoken\t5\tMB/s\nenc@hf\t2\tMB/s\nfit\t0.5\ts\nfit@hf\t7\ts\nlost\tskipped\tno data\n' >>"$1"
}

@test "bench report: saved runs become the runs, current and history tables; text outside the markers stays" {
  printf '%s\n' '# Results' 'kept above' '<!-- report:runs -->' 'old' '<!-- /report:runs -->' 'kept between' \
    '<!-- report:current -->' '<!-- /report:current -->' '<!-- report:history -->' '<!-- /report:history -->' 'kept below' >"$t/RESULTS.md"
  saved "$t/a.tsv" 2026-01-01
  report "$t/a.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  saved "$t/b.tsv" 2026-02-01
  sed -i 's/^enc\t30/enc\t40/' "$t/b.tsv"
  report "$t/b.tsv"
  [ "$status" -eq 0 ]
  doc="$(cat "$t/RESULTS.md")"
  for k in 'kept above' 'kept between' 'kept below'; do [[ "$doc" == *"$k"* ]]; done
  [[ "$doc" != *old* ]]
  # rates: ours / peer's; times: peer's / ours; the current figure is the newest run's
  grep -qF '| `enc` | 40 MB/s | tiktoken 5 MB/s (8.00×); hf 2 MB/s (20.00×) | R2 | 2026-02-01 |' "$t/RESULTS.md" || { echo "$doc"; false; }
  grep -qF '| `fit` | 0.5 s | hf 7 s (14.00×) | R2 | 2026-02-01 |' "$t/RESULTS.md"
  grep -qF '| `enc` | R1 | 2026-01-01 | 30 MB/s | tiktoken 5 MB/s (6.00×); hf 2 MB/s (15.00×) |' "$t/RESULTS.md"
  grep -qF '| R1 | 2026-01-01 | Some CPU, 2 cores | fp32 avx2, bf16 none | abc1234 | `make bench BENCH="enc fit"` | (none) |' "$t/RESULTS.md"
  [[ "$doc" != *lost* ]]
  # the same run twice is refused and changes nothing
  cp "$t/history.tsv" "$t/h0"
  report "$t/a.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"in the history already"* ]]
  cmp "$t/history.tsv" "$t/h0"
}

@test "bench report: a file that make bench did not save is refused" {
  printf 'enc\t30\tMB/s\n' >"$t/plain.tsv"
  : >"$t/RESULTS.md"
  report "$t/plain.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"not a file saved by make bench"* ]]
}
