#!/usr/bin/env bats
# Resource limits: pretrain and finetune state the memory of a run
# (parameters, gradients, optimizer, activations, data, the total) with
# --dry-run and on their first progress lines, and refuse a run that cannot
# fit in the memory available (MemAvailable, RLIMIT_AS, the cgroup's limit)
# before it starts, with exit 1 and the figures, instead of being killed by
# the kernel; --no-memory-check tries anyway and fails cleanly.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/ref.de" "$D/hyp.de" >corpus.txt
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o tok.json corpus.txt
  "$NLPIPE_BIN/train-wordpiece" -q --vocab-size 600 -o wp.json "$D/src.en" "$D/tgt.de"
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >docs.txt
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >cls.tsv
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>cls.tsv
  "$NLPIPE_BIN/pretrain" --arch bert --preset tiny -q -t 1 --tokenizer wp.json -B 8 --max-length 48 --steps 2 -m bert docs.txt
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  cd "$W"
  TINY=(--preset tiny -t 1 --max-length 32 -B 4 --steps 2 --tokenizer tok.json)
}

# the number of bytes of a figure such as "12.7 MiB" or "512 bytes"
bytes() {
  awk -v v="$1" -v u="$2" 'BEGIN { m["bytes"] = 1; m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824;
    m["TiB"] = 1099511627776; printf "%.0f\n", v * m[u] }'
}
# the figure of a --dry-run line NAME: in bytes
figure() { bytes $(printf '%s\n' "$output" | sed -n "s/^$1: \([0-9.]*\) \([A-Za-z]*\).*/\1 \2/p"); }

@test "pretrain --dry-run: parameters, gradients, optimizer, activations, data and the total, and nothing made" {
  run_split pretrain "${TINY[@]}" --dry-run -m "$T/r" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  for k in parameters gradients optimizer activations data total available; do
    printf '%s\n' "$output" | grep -q "^$k: " || { echo "no $k: $output"; false; }
  done
  [ ! -e "$T/r" ]
  # the parameter count is the model's; gradients as many, Adam twice as many
  floats="$(printf '%s\n' "$output" | sed -n 's/^parameters: .*(\([0-9]*\) floats)$/\1/p')"
  run_split pretrain "${TINY[@]}" -m "$T/r" corpus.txt
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"gpt: $floats parameters"* ]] || { echo "$floats: $stderr"; false; }
  # a real run states the same figures on its first lines
  line="$(printf '%s\n' "$stderr" | grep '^pretrain: memory: ')"
  [[ "$line" == "pretrain: memory: parameters "*", gradients "*", optimizer "*", activations "*", data "*" in all, "*" available" ]] ||
    { echo "$stderr"; false; }
  [ "$(printf '%s\n' "$stderr" | grep -n '^pretrain: memory: ' | cut -d: -f1)" -eq 1 ]
}

@test "pretrain --dry-run: the figures add up and grow with the batch as they should" {
  run_split pretrain "${TINY[@]}" --dry-run -m "$T/r" corpus.txt
  [ "$status" -eq 0 ]
  p=$(figure parameters) g=$(figure gradients) o=$(figure optimizer) a=$(figure activations) t=$(figure total)
  [ "$p" -eq "$g" ] && [ "$o" -eq $((2 * p)) ]
  # the total is the sum, to the rounding of the printed figures (0.1 of a unit)
  awk -v s=$((p + g + o + a)) -v t="$t" 'BEGIN { d = s - t; if (d < 0) d = -d; exit !(d <= 0.06 * t) }'
  run_split pretrain "${TINY[@]}" --dry-run -B 8 -m "$T/r" corpus.txt
  [ "$status" -eq 0 ]
  a2=$(figure activations)
  awk -v a="$a" -v b="$a2" 'BEGIN { exit !(b > 1.8 * a && b < 2.2 * a) }' || { echo "$a -> $a2"; false; }
}

@test "pretrain: a model that cannot fit is refused before anything is made, --dry-run says so at once" {
  # 34G parameters: 514 GiB with gradients and Adam (no machine of this project has it)
  run_split pretrain "${TINY[@]}" --d-model 65536 --heads 1 --dry-run -m "$T/r" corpus.txt
  [ "$status" -eq 1 ] || { echo "$status: $stderr"; false; }
  [[ "$output" == *"parameters: 128.4 GiB (34458567168 floats)"*"optimizer: 256.7 GiB"*"total: 514.3 GiB"* ]] || { echo "$output"; false; }
  [[ "$stderr" == "pretrain: the run needs 514.3 GiB of memory, "*" are available ("*")" ]] || { echo "$stderr"; false; }
  run_split pretrain "${TINY[@]}" --d-model 65536 --heads 1 -m "$T/r" corpus.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"the run needs 514.3 GiB of memory (parameters 128.4 GiB, gradients 128.4 GiB, optimizer 256.7 GiB, activations "*"but "*" are available ("*"): make the model or the batch smaller, or --no-memory-check"* ]] ||
    { echo "$stderr"; false; }
  [ ! -e "$T/r" ]
}

@test "pretrain: under ulimit -v a run that needs more is refused (exit 1, the figures); --no-memory-check fails cleanly" {
  [ -z "${NLPIPE_ASAN:-}" ] || skip "AddressSanitizer reserves terabytes of address space: no ulimit -v under make asan"
  # the small preset with 64 windows of 256 tokens: about 1.5 GiB of activations, under a 1 GiB address space
  args=(--preset small -t 1 -B 64 --steps 2 --tokenizer tok.json -m "$T/r" corpus.txt)
  run_split bash -c 'ulimit -v 1000000 && exec "$@"' _ pretrain "${args[@]}"
  [ "$status" -eq 1 ] || { echo "$status: $stderr"; false; }
  [[ "$stderr" == *"the run needs 1.5 GiB of memory ("*"activations 1.5 GiB for a micro-batch of 64 x 256 positions"*"are available (RLIMIT_AS (ulimit -v))"* ]] ||
    { echo "$stderr"; false; }
  [ ! -e "$T/r" ]
  run_split bash -c 'ulimit -v 1000000 && exec "$@"' _ pretrain --no-memory-check "${args[@]}"
  [ "$status" -eq 1 ] || { echo "$status: $stderr"; false; }
  [[ "$stderr" == *"out of memory"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/r" ]
  # what fits still runs under the same limit
  run_split bash -c 'ulimit -v 1000000 && exec "$@"' _ pretrain "${TINY[@]}" -q -m "$T/ok" corpus.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "pretrain: the estimate is near the run's real peak (within the program's own few tens of MiB)" {
  [ -z "${NLPIPE_ASAN:-}" ] || skip "AddressSanitizer's shadow memory is not the run's"
  [ -x /usr/bin/time ] || skip "no GNU time"
  run_split pretrain --preset small -t 1 -B 8 --max-length 128 --steps 1 --tokenizer tok.json --dry-run -m "$T/r" corpus.txt
  [ "$status" -eq 0 ]
  est=$(figure total)
  run_split /usr/bin/time -f 'peak %M' pretrain --preset small -t 1 -B 8 --max-length 128 --steps 1 -q --tokenizer tok.json -m "$T/r" corpus.txt
  [ "$status" -eq 0 ]
  peak=$(( $(printf '%s\n' "$stderr" | sed -n 's/^peak //p') * 1024 ))
  awk -v e="$est" -v p="$peak" 'BEGIN { exit !(p > 0.7 * e && p < e + 96 * 1048576) }' || { echo "estimate $est, peak $peak"; false; }
}

@test "finetune: --dry-run states the classifier's memory, a real run the same, and a run that cannot fit is refused" {
  run_split finetune -t 1 -B 16 --max-length 48 --epochs 1 --init bert --dry-run -m "$T/c" cls.tsv
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"parameters: "*"activations: "*"(a micro-batch of 16 x 48 positions)"*"total: "*"available: "* ]] || { echo "$output"; false; }
  [ ! -e "$T/c" ]
  run_split finetune -t 1 -B 16 --max-length 48 --epochs 1 --init bert -m "$T/c" cls.tsv
  [ "$status" -eq 0 ]
  [[ "$stderr" == "finetune: memory: parameters "*" available"* ]] || { echo "$stderr"; false; }
  run_split finetune predict --dry-run -m "$T/c" cls.tsv
  [ "$status" -eq 2 ]
  [ -z "${NLPIPE_ASAN:-}" ] || skip "AddressSanitizer reserves terabytes of address space: no ulimit -v under make asan"
  run_split bash -c 'ulimit -v 600000 && exec "$@"' _ finetune -t 1 -B 50000 --max-length 48 --epochs 1 --init bert -m "$T/d" cls.tsv
  [ "$status" -eq 1 ] || { echo "$status: $stderr"; false; }
  [[ "$stderr" == *"the run needs "*" of memory ("*"a micro-batch of 50000 x 48 positions"*"(RLIMIT_AS (ulimit -v))"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/d" ]
}

# --- issue 31: memory limits and endless input

# a tiny GPT and encoder-decoder for the decoding tools (made once, in $W)
tiny_models() {
  [ -d gpt ] || pretrain --preset tiny -t 1 -q --max-length 32 -B 4 --steps 2 --tokenizer tok.json -m gpt corpus.txt
  if [ ! -d mt ]; then
    head -160 "$NLPIPE_TOP/tools/demo-data/src.en" >train.en
    head -160 "$NLPIPE_TOP/tools/demo-data/tgt.de" >train.de
    train-bpe -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o mt.json train.en train.de
    pretrain --arch transformer --preset tiny -t 1 -q --tokenizer mt.json --src train.en --tgt train.de --steps 2 \
      --batch-tokens 600 -m mt
  fi
  [ -d bert-cls ] || finetune -t 1 -q -B 16 --max-length 48 --init bert --epochs 1 -m bert-cls cls.tsv
}

@test "31.3: under a small ulimit -v the model tools end: a refusal (or an out-of-memory) is an exit, no thread pool waits for memory" {
  [ -z "${NLPIPE_ASAN:-}" ] || skip "AddressSanitizer reserves terabytes of address space: no ulimit -v under make asan"
  tiny_models
  # the model tools link no BLAS: OpenBLAS's pthread pool started at load, and
  # its workers retried their 128 MiB buffers for ever under the limit
  for t in pretrain finetune generate translate; do
    ! ldd "$NLPIPE_BIN/$t" | grep -i blas || { echo "$t links a BLAS"; false; }
  done
  lim=(timeout -k 5 120 bash -c 'ulimit -v "$0" && exec "$@"')
  run_split "${lim[@]}" 150000 pretrain -t 1 -q --steps 3 --preset small -B 64 --tokenizer tok.json -m "$T/r" corpus.txt
  [ "$status" -eq 1 ] || { echo "status $status (124: a hang): $stderr"; false; }
  [[ "$stderr" == *"the run needs 1.5 GiB of memory ("*"are available (RLIMIT_AS (ulimit -v))"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/r" ]
  run_split "${lim[@]}" 100000 pretrain --preset tiny -t 1 -q --max-length 32 -B 4 --steps 2 --tokenizer tok.json -m "$T/ok" corpus.txt
  [ "$status" -eq 0 ] || { echo "status $status: $stderr"; false; }
  run_split "${lim[@]}" 100000 generate -m gpt -b 1024 -n 2 -p hi
  [ "$status" -le 1 ] || { echo "status $status (124: a hang): $stderr"; false; }
  run_split "${lim[@]}" 100000 translate -m mt --batch-size 65536 -b 4 cls.tsv
  [ "$status" -le 1 ] || { echo "status $status (124: a hang): $stderr"; false; }
}

@test "31.10: an endless line (/dev/zero) is refused at --max-line-bytes, naming the file and line, by every model tool" {
  tiny_models
  # under a memory limit (where the sanitizers allow one) and a time limit: reading
  # on would run out of memory (status 1, another message) or out of time (124)
  if [ -z "${NLPIPE_ASAN:-}" ]; then ul=(bash -c 'ulimit -v 1500000 && exec "$@"' _); else ul=(); fi
  M=(--max-line-bytes 100000)
  while IFS= read -r cmd; do
    # shellcheck disable=SC2086
    run_split timeout -k 5 120 "${ul[@]}" $cmd "${M[@]}"
    [ "$status" -eq 1 ] || { echo "$cmd: status $status: $stderr"; false; }
    [[ "$stderr" == *"'/dev/zero'"*"longer than 100000 bytes"*"(--max-line-bytes raises the limit)"* ]] || { echo "$cmd: $stderr"; false; }
  done <<EOC
translate -m mt /dev/zero
generate -m gpt -n 2 /dev/zero
generate -m gpt --batch -n 2 /dev/zero
generate -m gpt --perplexity /dev/zero
finetune predict -m $W/bert-cls /dev/zero
finetune eval -m $W/bert-cls /dev/zero
finetune -t 1 -q --init bert -m $T/f /dev/zero
pretrain --preset tiny -t 1 -q --steps 2 --tokenizer tok.json -m $T/p /dev/zero
pretrain --arch bert --preset tiny -t 1 -q --steps 2 --tokenizer wp.json -m $T/b /dev/zero
pretrain --arch transformer --preset tiny -t 1 -q --steps 2 --tokenizer mt.json -m $T/m /dev/zero
pretrain --arch transformer --preset tiny -t 1 -q --steps 2 --tokenizer mt.json --src /dev/zero --tgt train.de -m $T/m
EOC
  [ ! -e "$T/f" ] && [ ! -e "$T/p" ] && [ ! -e "$T/b" ] && [ ! -e "$T/m" ]
  # standard input is named too; the limit counts the line, not the input
  run_split bash -c 'head -c 300000 /dev/zero | translate -m mt --max-line-bytes 100000'
  [ "$status" -eq 1 ] && [[ "$stderr" == *"'standard input' line 1: longer than 100000 bytes"* ]] || { echo "$stderr"; false; }
  run_split bash -c 'yes "Save the file." | head -n 3 | translate -m mt -b 1 --max-length 2 --max-line-bytes 20'
  [ "$status" -eq 0 ] && [ "${#lines[@]}" -eq 3 ] || { echo "$status: $stderr"; false; }
}

# streams LINES lines into COMMAND... one at a time through a FIFO, each only
# after the answer to the one before has come out: a tool that reads its
# whole input before answering never gets the second line (time limit: 60 s)
one_by_one() {
  local n="$1" i
  shift
  rm -f "$T/in" "$T/out" && mkfifo "$T/in" && : >"$T/out"
  "$@" <"$T/in" >"$T/out" 2>"$T/err" &
  local pid=$!
  exec {w}>"$T/in"
  for i in $(seq "$n"); do
    echo "Save the file." >&$w
    local until=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$until" ]; do
      [ "$(wc -l <"$T/out")" -ge "$i" ] && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.02
    done
    [ "$(wc -l <"$T/out")" -ge "$i" ] || { exec {w}>&-; kill $pid 2>/dev/null; echo "no answer to line $i: $(cat "$T/err")"; false; }
  done
  exec {w}>&-
  wait $pid
}

@test "31.10: finetune predict (and translate, generate --batch) answer each line as it is read" {
  tiny_models
  one_by_one 3 finetune predict -m bert-cls
  [ "$(cut -f1 "$T/out" | sort -u | grep -c .)" -ge 1 ]
  one_by_one 3 translate -m mt -b 1 --max-length 3
  one_by_one 3 generate -m gpt --batch -n 2
}
