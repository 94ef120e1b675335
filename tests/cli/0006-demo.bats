#!/usr/bin/env bats
# make demo (tools/demo): it runs from the repository alone (no ../shared),
# explains the byte-level pieces it prints, and every stage leaves its
# artefacts in DEMO_DIR; a second run starts clean.

load helper

@test "demo stage 1: byte-level pieces explained and decoded piece by piece, a byte-exact round trip" {
  run_split env NLPIPE_BIN="$NLPIPE_BIN" DEMO_STAGES=1 DEMO_DIR="$BATS_TEST_TMPDIR/demo" SHARED=/nonexistent "$NLPIPE_TOP/tools/demo"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"Ġ is a space"* ]]
  line="$(grep '^  as text: ' <<<"$output")"
  # the pieces joined give the sentence back; a piece holding part of a character shows its bytes
  [[ "$line" == "  as text: [Die]"* ]]
  [[ "$line" == *"[<E2>][<82>][<AC>]"* ]]
  [[ "$output" == *"(byte-exact round trip)"* ]]
  [[ "$output" == *"[CLS]"*"[SEP]"* ]]
}

@test "demo: every stage, briefly (DEMO_MINUTES scales the training), leaves models, logs and plots; a second run starts clean" {
  command -v gnuplot >/dev/null || skip "gnuplot not installed (tools/install-deps installs it)"
  # minutes under the sanitizers (200 beam-search translations, 3 epochs of
  # fine-tuning); the tools it runs are each tested there
  [ -z "${NLPIPE_ASAN:-}" ] || skip "the whole demo runs in make test, not under make asan"
  d="$BATS_TEST_TMPDIR/demo"
  mkdir -p "$d" && touch "$d/stale"
  run_split env NLPIPE_BIN="$NLPIPE_BIN" DEMO_MINUTES=0.02 DEMO_THREADS=2 DEMO_DIR="$d" "$NLPIPE_TOP/tools/demo"
  [ "$status" -eq 0 ] || { echo "status $status: $stderr"; tail -20 <<<"$output"; false; }
  [ ! -e "$d/stale" ]
  for f in ende.json lm.json wp.json mt/best/model.safetensors gpt/latest/model.safetensors \
           classifier/best/model.safetensors mt.tsv gpt.tsv bert.tsv dev.hyp.de mt-loss.png gpt-loss.png attention.png; do
    [ -s "$d/$f" ] || { echo "missing $f"; false; }
  done
  [ "$(wc -l <"$d/dev.hyp.de")" -eq 200 ]
  [[ "$output" == *"BLEU"* ]]
  [[ "$output" == *"bits_per_byte"* ]]
  [[ "$output" == *"accuracy"* ]]
  [[ "$output" == *"Everything is in $d"* ]]
  [ "$(head -c 8 "$d/attention.png" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a ]
}
