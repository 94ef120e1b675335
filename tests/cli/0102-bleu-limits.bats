#!/usr/bin/env bats
# bleu under attack (issue 15): lines without end, TER's time and memory,
# and messages that name the file.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'the cat sat on the mat\na b c\n' >ref.txt
}

@test "bleu: endless input without a newline stops at --max-line-bytes (16 MiB), naming the file and line" {
  run_split bleu ref.txt </dev/zero
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' line 1: longer than 16777216 bytes, the longest line allowed (--max-line-bytes raises the limit)"* ]]
  { echo 'the cat'; head -c 3000 /dev/zero | tr '\0' 'x'; echo; } >long.txt
  run_split bleu --max-line-bytes 1000 ref.txt -i long.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'long.txt' line 2: longer than 1000 bytes"* ]]
  run_split bleu --max-line-bytes 1000 long.txt -i ref.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'long.txt' line 2: longer than 1000 bytes"* ]]
  run bleu --max-line-bytes 3001 ref.txt -i long.txt -b
  [ "$status" -eq 0 ]
}

@test "bleu -m ter: 20,000-word lines are refused at once with the file and line (took 64 s and 3.5 GB)" {
  awk 'BEGIN { for (i = 0; i < 20000; i++) printf "w%d ", (i * 7) % 300; print "" }' >h.txt
  awk 'BEGIN { for (i = 0; i < 20000; i++) printf "w%d ", (i * 11) % 300; print "" }' >r.txt
  run_split bleu r.txt -i h.txt -m ter
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bleu: 'h.txt' line 1: the hypothesis has 20000 words, more than the 10000 that TER takes"* ]]
  run_split bleu h.txt -m ter <<<"a b c"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bleu: '<stdin>' line 1: reference 1 has 20000 words, more than the 10000 that TER takes"* ]]
  # BLEU and chrF on the same lines are fine
  run bleu r.txt -i h.txt -m bleu chrf -b
  [ "$status" -eq 0 ]
}

@test "bleu -m ter: a 3,000-word line is scored in bounded memory (the beam only)" {
  awk 'BEGIN { for (i = 0; i < 3000; i++) printf "w%d ", (i * 7) % 300; print "" }' >h.txt
  awk 'BEGIN { for (i = 0; i < 3000; i++) printf "w%d ", (i * 7 + (i % 5 == 0)) % 300; print "" }' >r.txt
  peak() { /usr/bin/python3 -c 'import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' "$@"; }
  run peak "$NLPIPE_BIN/bleu" r.txt -i h.txt -m ter -b
  [ "${lines[0]%% *}" -eq 0 ]
  # the whole matrix of 3,000 x 3,000 words took 81 MB
  [ -n "${NLPIPE_ASAN:-}" ] || [ "${lines[0]##* }" -lt 40 ] || { echo "peak ${lines[0]##* } MB"; false; }
}
