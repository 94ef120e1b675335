#!/usr/bin/env bats
# bleu: misuse and bad input — a clear message, the right exit status, no crash.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'a b c\nd e f\n' >ref.txt
  printf 'a b c\nd e g\n' >hyp.txt
}

usage() { # status 2 with the message and the Try line
  [ "$status" -eq 2 ] || { echo "status $status: $stderr"; return 1; }
  [[ "$stderr" == *"$1"* ]] || { echo "stderr: $stderr"; return 1; }
  [[ "$stderr" == *"Try 'bleu --help' for more information."* ]]
  [ -z "$output" ]
}

@test "bleu misuse: no reference" {
  run_split bleu -i hyp.txt
  usage "no reference file given"
  run_split bleu -i hyp.txt ref.txt    # -i takes every file after it
  usage "no reference file given"
}

@test "bleu misuse: bad option values" {
  run_split bleu ref.txt -i hyp.txt -m meteor
  usage "'meteor' is not one of bleu, chrf, ter or exact"
  run_split bleu ref.txt -i hyp.txt --tokenize moses
  usage "invalid value for --tokenize: 'moses' is not one of"
  # sacreBLEU's test-set download: refused with the reason, not misread
  run_split bleu -t wmt14 -l en-de -i hyp.txt
  usage "'-t': bleu does not download test sets"
  run_split bleu ref.txt --test-set wmt14 -i hyp.txt
  usage "bleu does not download test sets"
  run_split bleu ref.txt -i hyp.txt -s laplace
  usage "invalid value for -s"
  run_split bleu ref.txt -i hyp.txt -w -1
  usage "invalid value for -w"
  run_split bleu ref.txt -i hyp.txt --max-ngram-order 0
  usage "--max-ngram-order"
  run_split bleu ref.txt -i hyp.txt --smooth-value x
  usage "not a finite number"
  run_split bleu ref.txt -i hyp.txt -m chrf --chrf-char-order 0 --chrf-word-order 0
  usage "chrF needs"
  run_split bleu ref.txt -i hyp.txt -f xml
  usage "invalid value for -f"
}

@test "bleu misuse: incompatible modes" {
  run_split bleu ref.txt -i hyp.txt hyp.txt --paired-bs --paired-ar
  usage "cannot be used together"
  run_split bleu ref.txt -i hyp.txt --paired-bs
  usage "paired tests need several systems"
  cp hyp.txt h2.txt
  run_split bleu ref.txt -i hyp.txt h2.txt --confidence
  usage "--confidence takes one system"
  run_split bleu ref.txt -i hyp.txt --sentence-level -m bleu chrf
  usage "--sentence-level takes exactly one metric"
  run_split bleu ref.txt -i hyp.txt --sentence-level --confidence
  usage "statistical tests are unavailable"
  run_split bleu ref.txt -i hyp.txt h2.txt --sentence-level
  usage "scores one system only"
  run_split bleu ref.txt -i hyp.txt hyp.txt
  usage "'hyp.txt' is given twice"
  run_split env SACREBLEU_SEED=abc bleu ref.txt -i hyp.txt --confidence
  usage "SACREBLEU_SEED='abc' is not a seed"
}

@test "bleu bad input: missing or unreadable files" {
  run_split bleu nope.txt -i hyp.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: cannot open 'nope.txt': No such file or directory" ]
  run_split bleu ref.txt -i nope.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot open 'nope.txt'"* ]]
  mkdir d
  run_split bleu d -i hyp.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'d': Is a directory"* ]]
  if [ "$(id -u)" -ne 0 ]; then
    cp ref.txt locked.txt; chmod 000 locked.txt
    run_split bleu locked.txt -i hyp.txt
    [ "$status" -eq 1 ]
    [[ "$stderr" == *"cannot open 'locked.txt': Permission denied"* ]]
  fi
}

@test "bleu bad input: different line counts name both files and counts" {
  printf 'a b c\n' >short.txt
  run_split bleu short.txt -i hyp.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: 'hyp.txt' has 2 lines but 'short.txt' has 1" ]
  run_split bleu ref.txt short.txt <hyp.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: '<stdin>' has 2 lines but 'short.txt' has 1" ]
}

@test "bleu bad input: invalid UTF-8 names file, line and byte" {
  printf 'a b c\nd \xff f\n' >bad.txt
  run_split bleu ref.txt -i bad.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: 'bad.txt' line 2 (byte 8): invalid UTF-8" ]
  run_split bleu bad.txt -i hyp.txt
  [ "$stderr" = "bleu: 'bad.txt' line 2 (byte 8): invalid UTF-8" ]
  printf 'a \xed\xa0\x80\n' >surrogate.txt
  run_split bleu surrogate.txt -i surrogate.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'surrogate.txt' line 1 (byte 2): invalid UTF-8"* ]]
  run_split bleu ref.txt <bad.txt
  [ "$stderr" = "bleu: '<stdin>' line 2 (byte 8): invalid UTF-8" ]
}

@test "bleu bad input: empty input" {
  : >empty.txt
  run_split bleu ref.txt -i empty.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: 'empty.txt' is empty: no hypotheses to score" ]
  run_split bleu ref.txt </dev/null
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: standard input is empty: no hypotheses to score" ]
  run_split bleu empty.txt -i hyp.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"has 2 lines but 'empty.txt' has 0"* ]]
}

@test "bleu bad input: systems on standard input with different tab counts" {
  printf 'a\tb\nc\n' | { run_split bleu ref.txt; [ "$status" -eq 1 ]; [[ "$stderr" == *"'<stdin>' line 2: 1 tab-separated fields, expected 2"* ]]; }
}

@test "bleu: odd but valid input does not crash" {
  printf '\0\0\n\t\t\t\n' >nul.txt
  run bleu nul.txt -i nul.txt -m bleu chrf ter
  [ "$status" -eq 0 ]
  head -c 200000 /dev/zero | tr '\0' 'x' >long.txt
  run bleu long.txt -i long.txt -m bleu chrf ter -b
  [ "$status" -eq 0 ]
  printf '%s\n' "$(seq -s ' ' 1 300)" >many.txt
  printf '%s\n' "$(seq -s ' ' 300 -1 1)" >rev.txt
  run bleu many.txt -i rev.txt -m ter -b
  [ "$status" -eq 0 ]
}

@test "bleu bad input: a line too long for TER is refused with the file and line, not killed" {
  cd "$BATS_TEST_TMPDIR"
  # 150,000 words against 150,000: past TER's 10,000 words (its time grows
  # with words x 1,000 shift candidates)
  awk 'BEGIN { for (i = 0; i < 150000; i++) printf "w%d ", i % 5000; print "" }' >long.hyp
  awk 'BEGIN { for (i = 0; i < 150000; i++) printf "w%d ", i % 5003; print "" }' >long.ref
  run_split bleu long.ref -i long.hyp -m ter
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bleu: 'long.hyp' line 1: the hypothesis has 150000 words, more than the 10000 that TER takes"*"split such long lines"* ]]
  # BLEU and chrF on the same line are linear and fine
  run_split bleu long.ref -i long.hyp -m bleu chrf -b
  [ "$status" -eq 0 ]
}

@test "bleu misuse: a null or empty metrics value in a config file is an error, not a crash" {
  for v in '~' '' 'null' '""'; do
    printf 'metrics: %s\n' "$v" >m.yaml
    run_split bleu -c m.yaml ref.txt -i hyp.txt
    [ "$status" -eq 3 ] || { echo "metrics: $v: status $status"; false; }
    [ "$stderr" = "bleu: 'm.yaml' line 1: invalid value for 'metrics': no metric given" ] || { echo "metrics: $v: $stderr"; false; }
  done
  run_split bleu ref.txt -i hyp.txt -m ''
  usage "invalid value for -m: no metric given"
}

@test "bleu misuse: systems after a repeated baseline are checked and named by their own file" {
  cp hyp.txt h2.txt
  printf 'a b c\n' >short.txt
  # the baseline given twice is skipped, as sacreBLEU does; h2.txt twice is still an error
  run_split bleu ref.txt -i hyp.txt hyp.txt h2.txt h2.txt --paired-bs -pbsn 10
  usage "'h2.txt' is given twice as a system"
  # a line-count mismatch names the file that has it
  run_split bleu ref.txt -i hyp.txt hyp.txt short.txt --paired-bs -pbsn 10
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: ignoring 'hyp.txt': it is also the baseline
bleu: 'short.txt' has 1 lines but 'ref.txt' has 2" ]
}

@test "bleu misuse: a negative --smooth-value is refused, not scored as nan" {
  printf 'a b c d\n' >r.txt; printf 'a x y z\n' >h.txt
  for m in floor add-k; do
    run_split bleu r.txt -i h.txt -s $m --smooth-value -1
    usage "invalid value for --smooth-value: '-1' is negative" || { echo "-s $m"; false; }
    run_split bleu r.txt -i h.txt -s $m -sv -0.5
    usage "is negative"
  done
  printf 'smooth-value: -2\n' >s.yaml
  run_split bleu -c s.yaml r.txt -i h.txt -s floor
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"s.yaml' line 1: invalid value for 'smooth-value': '-2' is negative"* ]]
  # zero is a value (floor 0 is sacreBLEU's log(0) floor)
  run bleu r.txt -i h.txt -s floor -sv 0 -b
  [ "$status" -eq 0 ]
  [ "$output" = "0.0" ]
}

@test "bleu misuse: a bad metrics value in a config file names the file and line (exit 3)" {
  printf 'width: 2\nmetrics: bleu meteor\n' >m.yaml
  run_split bleu -c m.yaml ref.txt -i hyp.txt
  [ "$status" -eq 3 ]
  [ "$stderr" = "bleu: 'm.yaml' line 2: invalid value for 'metrics': 'meteor' is not one of bleu, chrf, ter or exact" ]
  printf 'metrics: [chrf, bleu]\n' >l.yaml
  run bleu -c l.yaml ref.txt -i hyp.txt -f text
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *BLEU\|* ]] && [[ "${lines[1]}" == *chrF2\|* ]]
}
