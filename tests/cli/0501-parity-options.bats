#!/usr/bin/env bats
# tools/parity and the bench tools parse their numbers strictly (issue 15):
# "-t 100000" crashed parity (OpenMP's stacks), "-t -3" and "-t abc" were
# taken. The tools' option layer and its range, 0 to 4096.

load helper

@test "parity -t: out of range or not a number is a usage error, before any file is read" {
  P="$NLPIPE_TOOLS/parity"
  for t in 100000 -3 abc '' 1e3; do
    run_split "$P" -t "$t" "$BATS_TEST_TMPDIR/no-fixture" "$BATS_TEST_TMPDIR/out.safetensors"
    [ "$status" -eq 2 ] || { echo "-t '$t': status $status: $stderr"; false; }
    [[ "$stderr" == "parity: invalid value for -t: "* ]]
    [[ "$stderr" == *"Try 'parity --help' for more information."* ]]
  done
  run_split "$P" --threads=100000 "$BATS_TEST_TMPDIR/no-fixture" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"invalid value for --threads: 100000 is out of range (0 to 4096)"* ]]
  run_split "$P" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"-t, --threads N"* ]]
}

@test "bench tools: numbers are parsed strictly (no atoi)" {
  run_split "$NLPIPE_TOOLS/genbench" gen gpt_small -t abc
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"genbench: invalid value for -t: 'abc' is not an integer"* ]]
  run_split "$NLPIPE_TOOLS/trainbench" train gpt_small -r 0
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"trainbench: invalid value for -r: 0 is out of range"* ]]
  run_split "$NLPIPE_TOOLS/benchtime" -n x -- true
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"benchtime: invalid value for -n: 'x' is not an integer"* ]]
  ! grep -n 'atoi *(' "$NLPIPE_TOP"/tools/*.c "$NLPIPE_TOP"/tools/*/*.c
}
