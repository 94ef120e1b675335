#!/usr/bin/env bats
# valgrind (memcheck): a short pretrain, translate, generate and finetune run
# read no uninitialised or freed memory and leak nothing definite. Built
# without AVX-512 (valgrind 3.19 does not decode it): build/vg, made here
# from the same sources with -march=x86-64-v3; the kernels are picked from
# CPUID, which valgrind reports without AVX-512, so the AVX2 ones run.
# "Possibly lost" blocks are the thread stacks of the OpenMP pool,
# which live until exit. `make valgrind` runs this file (about 3 minutes on
# 2 idle cores).

load helper

# minutes under memcheck: `make valgrind` runs it, make test does not
enabled() { [ -n "${NLPIPE_VALGRIND:-}" ] && [ -z "${NLPIPE_ASAN:-}" ] && command -v valgrind >/dev/null; }

setup_file() {
  enabled || return 0
  VG_BIN="$BATS_FILE_TMPDIR/vg/bin"
  make -s -C "$NLPIPE_TOP" all BUILD="$BATS_FILE_TMPDIR/vg" BINDIR="$VG_BIN" TOOLDIR="$BATS_FILE_TMPDIR/vg/tools" \
    CFLAGS='-O1 -g -march=x86-64-v3 -Wno-psabi' >/dev/null
  export VG_BIN
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/ref.de" "$D/hyp.de" >corpus.txt
  "$VG_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o tok.json corpus.txt
  "$VG_BIN/train-bpe" -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o mt.json "$D/src.en" "$D/tgt.de"
  "$VG_BIN/train-wordpiece" -q --vocab-size 600 -o wp.json "$D/src.en" "$D/tgt.de"
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >cls.tsv
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>cls.tsv
}

setup() {
  [ -n "${NLPIPE_VALGRIND:-}" ] || skip "minutes under memcheck: make valgrind runs it"
  [ -z "${NLPIPE_ASAN:-}" ] || skip "not under make asan (the sanitizers and valgrind do not mix)"
  command -v valgrind >/dev/null || skip "valgrind not installed (apt-get install valgrind)"
  VG_BIN="$BATS_FILE_TMPDIR/vg/bin"
  W="$BATS_FILE_TMPDIR"
  cd "$W"
}

# vg TOOL ARGS...: the tool under memcheck; any error, or a definite leak, fails
vg() {
  local tool="$1"
  shift
  OMP_WAIT_POLICY=PASSIVE run_split valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
    --error-exitcode=99 "$VG_BIN/$tool" "$@"
  [ "$status" -eq 0 ] || { echo "status $status"; echo "$stderr" | head -60; false; }
  [[ "$stderr" != *"Invalid read"* && "$stderr" != *"uninitialised"* && "$stderr" != *"definitely lost"* ]] ||
    { echo "$stderr" | head -60; false; }
}

@test "valgrind: pretrain (GPT), resumed, then generate: sampling, beam, perplexity, int8" {
  vg pretrain --preset tiny -q -t 2 --tokenizer tok.json --max-length 32 -B 4 --steps 2 --keep 1 -m g corpus.txt
  vg pretrain -q -t 2 --resume g --steps 3
  vg generate -m g -t 2 -p "Die Datei" -n 6 --seed 1
  vg generate -m g -t 2 -p "Die Datei" -n 6 -b 3
  vg generate -m g -t 2 --perplexity "$NLPIPE_TOP/tools/demo-data/hyp.de"
  vg generate -m g -t 2 -p "Die Datei" -n 6 --greedy --int8
}

@test "valgrind: pretrain --arch transformer, then translate (beam, n-best, attention, int8)" {
  vg pretrain --arch transformer --preset tiny -q -t 2 --tokenizer mt.json --batch-tokens 600 --steps 2 \
    --src "$NLPIPE_TOP/tools/demo-data/src.en" --tgt "$NLPIPE_TOP/tools/demo-data/tgt.de" -m mt
  head -3 "$NLPIPE_TOP/tools/demo-data/src.en" >in.en
  vg translate -m mt -t 2 -b 3 --n-best 2 --max-length 8 in.en
  vg translate -m mt -t 2 -b 1 --max-length 8 --attention att.tsv in.en
  vg translate -m mt -t 2 -b 2 --max-length 8 --int8 in.en
}

@test "valgrind: pretrain --arch bert, finetune, predict" {
  vg pretrain --arch bert --preset tiny -q -t 2 --tokenizer wp.json -B 8 --max-length 48 --steps 2 -m b "$NLPIPE_TOP/tools/demo-data/src.en"
  vg finetune -q -t 2 -B 16 --max-length 48 --epochs 1 --init b -m c cls.tsv
  head -3 "$NLPIPE_TOP/tools/demo-data/src.en" | vg finetune predict -m c -t 2
}
