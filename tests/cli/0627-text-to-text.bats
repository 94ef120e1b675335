#!/usr/bin/env bats
# Text to text (issue 28): pretrain --prefix puts T5's task prefix before
# every source (training and validation) and records it with the model;
# translate puts it before each input by default, --prefix overrides it.
# Two tiny runs on the 200 bundled sentence pairs — one with --prefix P, one
# without on P-prefixed data — must be the same training (losses, BLEU,
# weights) and translate the same; --init keeps or replaces the prefix,
# --resume keeps it; a span-pretrained checkpoint trains a text-to-text
# classifier whose labels bleu -m exact scores. Each run takes a second.

load helper

P='translate English to German: '

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  paste <(head -160 "$D/src.en") <(head -160 "$D/tgt.de") >"$W/train.tsv"
  paste <(tail -20 "$D/src.en") <(tail -20 "$D/tgt.de") >"$W/valid.tsv"
  sed "s/^/$P/" "$W/train.tsv" >"$W/train-p.tsv"
  sed "s/^/$P/" "$W/valid.tsv" >"$W/valid-p.tsv"
  cut -f1 "$W/valid.tsv" | head -6 >"$W/in.en"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -q -o "$W/tok.json" \
    "$D/src.en" "$D/tgt.de"
  local run=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600
    --steps 30 --eval-every 15 --dropout 0 --tokenizer "$W/tok.json")
  "$NLPIPE_BIN/pretrain" "${run[@]}" --prefix "$P" --valid "$W/valid.tsv" -m "$W/pre" --log "$W/pre.tsv" "$W/train.tsv"
  "$NLPIPE_BIN/pretrain" "${run[@]}" --valid "$W/valid-p.tsv" -m "$W/man" --log "$W/man.tsv" "$W/train-p.tsv"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  TINY=(--arch transformer --preset tiny -t 1 -q --schedule inverse-sqrt --lr 3e-3 --warmup 5 --batch-tokens 600
    --dropout 0)
}

# the safetensors metadata key $2 of model file $1 ("None" when absent)
meta() {
  python3 -c 'import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
print(json.loads(f.read(n))["__metadata__"].get(sys.argv[2]))' "$1" "$2"
}

# the tensors of a model file: its bytes after the header
tensors() { python3 -c 'import struct, sys; f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]; f.seek(8 + n); sys.stdout.buffer.write(f.read())' "$1" | md5sum; }

# the loss columns of a log, without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

@test "pretrain --prefix: recorded with every model file and in run.yaml; the training is the one on prefixed sources" {
  for d in latest best step-00000030; do
    [ "$(meta "$W/pre/$d/model.safetensors" prefix)" = "$P" ]
    [ "$(meta "$W/man/$d/model.safetensors" prefix)" = "None" ]
  done
  grep -qx "prefix: \"$P\"" "$W/pre/latest/run.yaml"
  ! grep -q '^prefix' "$W/man/latest/run.yaml"
  # the same losses, validation loss and BLEU (the validation sources got it too), the same weights
  diff <(losses "$W/pre.tsv") <(losses "$W/man.tsv")
  [ "$(tensors "$W/pre/latest/model.safetensors")" = "$(tensors "$W/man/latest/model.safetensors")" ]
}

@test "translate: the recorded prefix is applied; --prefix gives it to a model without one; --prefix '' removes it" {
  # --scores: the same source ids give the same scores to the last digit
  translate -m "$W/pre" -b 2 --scores <"$W/in.en" >"$T/recorded"
  translate -m "$W/man" -b 2 --scores --prefix "$P" <"$W/in.en" >"$T/given"
  sed "s/^/$P/" "$W/in.en" | translate -m "$W/man" -b 2 --scores >"$T/by-hand"
  sed "s/^/$P/" "$W/in.en" | translate -m "$W/pre" -b 2 --scores --prefix '' >"$T/by-hand-2"
  [ "$(wc -l <"$T/recorded")" -eq 6 ]
  cmp "$T/recorded" "$T/given"
  cmp "$T/recorded" "$T/by-hand"
  cmp "$T/recorded" "$T/by-hand-2"
  # without it: other sources, other scores
  translate -m "$W/pre" -b 2 --scores --prefix '' <"$W/in.en" >"$T/none"
  translate -m "$W/man" -b 2 --scores <"$W/in.en" >"$T/none-2"
  ! cmp -s "$T/recorded" "$T/none"
  cmp "$T/none" "$T/none-2"
  # another prefix overrides the recorded one
  translate -m "$W/pre" -b 2 --scores --prefix 'summarize: ' <"$W/in.en" >"$T/other"
  sed 's/^/summarize: /' "$W/in.en" | translate -m "$W/man" -b 2 --scores >"$T/other-2"
  cmp "$T/other" "$T/other-2"
  ! cmp -s "$T/other" "$T/recorded"
  # the encoder sees the prefix's tokens (the attention table's source row); an empty line stays empty
  printf 'Hello.\n\nHello.\n' | translate -m "$W/pre" -b 1 --attention "$T/att.tsv" >"$T/out"
  printf '%sHello.\n\n%sHello.\n' "$P" "$P" | translate -m "$W/man" -b 1 --attention "$T/att-2.tsv" >"$T/out-2"
  [ "$(wc -l <"$T/out")" -eq 3 ] && [ "$(sed -n 2p "$T/out")" = "" ]
  cmp "$T/out" "$T/out-2"
  cmp "$T/att.tsv" "$T/att-2.tsv"
  [[ "$(sed -n 2p "$T/att.tsv" | tr -d '\t▁')" == "translateEnglishtoGerman:Hello.</s>" ]] || { sed -n 2p "$T/att.tsv"; false; }
  # a model file alone (no run directory) carries it
  translate -m "$W/pre/latest/model.safetensors" --tokenizer "$W/tok.json" -b 2 --scores <"$W/in.en" >"$T/file"
  cmp "$T/recorded" "$T/file"
}

@test "pretrain --init keeps the model's prefix unless --prefix replaces it; --resume keeps it" {
  run_split pretrain "${TINY[@]}" -v --init "$W/pre" --steps 2 -m "$T/kept" "$W/train.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"'$W/pre' was trained with --prefix '$P': its sources get it too"* ]]
  [ "$(meta "$T/kept/latest/model.safetensors" prefix)" = "$P" ]
  pretrain "${TINY[@]}" --init "$W/pre" --prefix 'summarize: ' --steps 2 -m "$T/new" "$W/train.tsv"
  [ "$(meta "$T/new/latest/model.safetensors" prefix)" = "summarize: " ]
  grep -qx 'prefix: "summarize: "' "$T/new/latest/run.yaml"
  pretrain "${TINY[@]}" --init "$W/pre" --prefix '' --steps 2 -m "$T/none" "$W/train.tsv"
  [ "$(meta "$T/none/latest/model.safetensors" prefix)" = "None" ]
  ! grep -q '^prefix' "$T/none/latest/run.yaml"
  # --init with the prefix = the prefixed data without one: the same first loss
  pretrain "${TINY[@]}" --init "$W/pre" --steps 2 -m "$T/k2" --log "$T/k2.tsv" "$W/train.tsv"
  pretrain "${TINY[@]}" --init "$W/man" --steps 2 -m "$T/m2" --log "$T/m2.tsv" "$W/train-p.tsv"
  diff <(losses "$T/k2.tsv") <(losses "$T/m2.tsv")
  # --resume: the run's prefix, and no other
  run_split pretrain --resume "$T/new" --steps 4 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(meta "$T/new/latest/model.safetensors" prefix)" = "summarize: " ]
  [ "$(meta "$T/new/latest/model.safetensors" step)" = "4" ]
  run_split pretrain --resume "$T/new" --steps 6 --prefix 'other: '
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix 'other: ': the run '$T/new' trains with --prefix 'summarize: '; continue it so, or start a new run from it with --init"* ]]
  run_split pretrain --resume "$T/none" --steps 6 --prefix 'other: '
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"trains with no prefix"* ]]
}

@test "text to text: a span-pretrained checkpoint trains a prefixed classifier on a TSV; bleu -m exact scores its labels" {
  # span corruption: the sentinels join the tokenizer
  pretrain --arch transformer --objective span --preset tiny -t 1 -q --batch-tokens 600 --steps 5 --dropout 0 \
    --tokenizer "$W/tok.json" -m "$T/span" "$D/lm-train.txt"
  [ "$(grep -o '"<extra_id_[0-9]*>"' "$T/span/latest/tokenizer.json" | wc -l)" -eq 100 ]
  # a labelled TSV: 'section: <text>' -> label, the prefix given by --prefix
  paste <(head -120 "$D/src.en") <(head -120 "$D/src.en" | awk '{ print (length($0) % 2 ? "odd" : "even") }') >"$T/cls.tsv"
  head -20 "$T/cls.tsv" >"$T/dev.tsv"
  run_split pretrain "${TINY[@]}" -v --init "$T/span" --prefix 'section: ' --steps 20 --valid "$T/dev.tsv" \
    -m "$T/cls" "$T/cls.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *"vocabulary grows"* ]]
  [[ "$stderr" == *"every source begins with the prefix 'section: '"* ]]
  [ "$(grep -o '"<extra_id_[0-9]*>"' "$T/cls/latest/tokenizer.json" | wc -l)" -eq 100 ]
  [ "$(meta "$T/cls/latest/model.safetensors" prefix)" = "section: " ]
  # the documented pipeline: labels generated, scored against the TSV's
  cut -f1 "$T/dev.tsv" | translate -m "$T/cls" -b 1 >"$T/labels"
  [ "$(wc -l <"$T/labels")" -eq 20 ]
  run_split bash -c "cut -f1 '$T/dev.tsv' | translate -m '$T/cls' -b 1 | bleu -m exact -f text <(cut -f2 '$T/dev.tsv')"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  c="$(paste "$T/labels" <(cut -f2 "$T/dev.tsv") | awk -F'\t' '$1 == $2' | wc -l)"
  [[ "$output" == "Exact|nrefs:1|case:mixed|version:2.5.1+nlpipe = "*" (correct = $c lines = 20)" ]] || { echo "$output"; false; }
}

@test "--prefix misuse: usage errors (2); ids with a recorded prefix are warned about" {
  run_split pretrain --arch gpt --prefix x --steps 1 "$W/train.tsv"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix is for --arch transformer --objective translate"* ]]
  run_split pretrain --arch transformer --objective span --prefix x --steps 1 --tokenizer "$W/tok.json" "$D/lm-train.txt"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix is for --arch transformer --objective translate"* ]]
  run_split pretrain "${TINY[@]}" --prefix $'a\tb' --steps 1 --tokenizer "$W/tok.json" -m "$T/x" "$W/train.tsv"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix: the prefix holds a tab or a line break"* ]]
  [ ! -e "$T/x" ]
  run_split translate -m "$W/pre" --prefix $'\xff'
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix: the prefix is not valid UTF-8 (byte 1)"* ]]
  run_split translate -m "$W/pre" --input-format id --prefix x
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--prefix is text: with --input-format id, put its ids in the input"* ]]
  # a config file's bad prefix: exit 3 naming the file and line
  printf 'prefix: "a\\tb"\n' >"$T/c.yaml"
  run_split translate -m "$W/pre" -c "$T/c.yaml"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'$T/c.yaml' line 1: prefix: the prefix holds a tab"* ]]
  # ids: the recorded prefix cannot be applied; said once, the ids go as they are
  run_split bash -c "echo '5 6 7' | translate -m '$W/pre' --input-format id --output-format id -b 1"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"was trained with the prefix '$P', which ids are not given"* ]]
  run_split bash -c "echo '5 6 7' | translate -m '$W/pre' --input-format id --output-format id -b 1 --prefix ''"
  [ "$status" -eq 0 ]
  [ -z "$stderr" ]
}
