#!/usr/bin/env bats
# A tool killed while writing a named file (-o) leaves the old file intact and
# no temporary behind, and dies of the signal it got.

load helper

@test "SIGTERM while writing -o: old file intact, no *.tmp.* left, status 128+15" {
  cd "$BATS_TEST_TMPDIR"
  printf 'low lower newest widest\n' >c.txt
  train-bpe --byte-level --vocab-size 270 --min-frequency 1 -q -o tok.json c.txt
  echo "old content" >out.txt
  mkfifo in.fifo
  sleep 5 >in.fifo &            # keeps the input open, so tokenize waits
  tokenize -m tok.json -o out.txt <in.fifo &
  pid=$!
  for i in $(seq 50); do ls out.txt.tmp.* >/dev/null 2>&1 && break; sleep 0.1; done
  ls out.txt.tmp.*              # the temporary exists while it runs
  kill -TERM "$pid"
  status=0; wait "$pid" || status=$?
  [ "$status" -eq 143 ]
  [ "$(cat out.txt)" = "old content" ]
  ! ls out.txt.tmp.* 2>/dev/null
}
