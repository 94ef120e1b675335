#!/usr/bin/env bats
# tools/parity (the developer tool that runs the PyTorch parity fixtures):
# usage, and bad model files — truncated, bad header, wrong shapes, missing
# tensors, no configuration — each a precise message and exit 3, never a crash.

load helper

setup() {
  need_shared
  P="$NLPIPE_TOOLS/parity"
  D="$BATS_TEST_TMPDIR/fx"
  cp -r "$SHARED/parity/fixtures/gpt" "$D"
  chmod -R u+w "$D"
  M="$D/model.safetensors"
}

# rewrite model.safetensors with python3 + numpy through the reference's stio.py
restio() {
  /usr/bin/python3 - "$SHARED/parity" "$M" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import stio
t, meta = stio.load(sys.argv[2], True)
exec(sys.argv[3])
stio.save(sys.argv[2], t, meta)
PY
}

@test "parity: --help, usage errors" {
  run_split "$P" --help
  [ "$status" -eq 0 ]
  [[ "$output" == Usage:\ parity* ]]
  run_split "$P" "$D"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"expected FIXTURE_DIR and OUT.safetensors"* ]]
  run_split "$P" --bogus "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 2 ]
}

@test "parity: a good fixture runs and writes every reference name" {
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/out.safetensors"
  [ "$status" -eq 0 ]
  run /usr/bin/python3 "$SHARED/parity/compare.py" "$D/ref.safetensors" "$BATS_TEST_TMPDIR/out.safetensors" --quiet --skip '^(grad|adamw)\.'
  [ "$status" -eq 0 ]
}

@test "parity: truncated model file, exit 3" {
  head -c 100000 "$M" > "$M.cut" && mv "$M.cut" "$M"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "parity: '$M': tensor '"*"(truncated?)" ]]
  head -c 5 "$SHARED/parity/fixtures/gpt/model.safetensors" > "$M"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"shorter than the 8-byte header length"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/o" ]
}

@test "parity: bad header, exit 3" {
  printf '\x0e\x00\x00\x00\x00\x00\x00\x00{"a": [1, 2,  ' > "$M"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "parity: '$M': bad safetensors header: JSON error at header byte"* ]]
  printf '\xff\xff\xff\xff\x00\x00\x00\x00{}' > "$M"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"is implausible"* || "$stderr" == *"truncated"* ]]
}

@test "parity: wrong shape, exit 3" {
  restio 't["h.1.mlp.c_fc.weight"] = t["h.1.mlp.c_fc.weight"].reshape(256, 64)'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [ "$stderr" = "parity: '$M': tensor 'h.1.mlp.c_fc.weight' has shape [256, 64], expected [64, 256]" ]
}

@test "parity: missing tensor, exit 3" {
  restio 'del t["ln_f.bias"]'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [ "$stderr" = "parity: '$M': missing tensor 'ln_f.bias'" ]
}

@test "parity: no or bad configuration, exit 3" {
  restio 'meta.pop("config")'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"no model configuration"* ]]
  restio 'meta["config"] = "{\"n_embd\": \"wide\"}"'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"config key 'n_embd' is not a non-negative integer"* ]]
}

@test "parity: bad inputs and reference files, missing directory: exit 3" {
  printf 'not safetensors' > "$D/inputs.safetensors"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"inputs.safetensors"* ]]
  run_split "$P" "$BATS_TEST_TMPDIR/nowhere" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"cannot open '$BATS_TEST_TMPDIR/nowhere'"* ]]
}

@test "parity: a missing fixture file, exit 3 naming it, no output written" {
  rm "$D/inputs.safetensors"
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/out.safetensors"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"inputs.safetensors"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/out.safetensors" ]
}

# rewrite the inputs of fixture directory $1 (a copy) with python3 + numpy through stio.py
restio_inputs() {
  /usr/bin/python3 - "$SHARED/parity" "$1/inputs.safetensors" "$2" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import stio
t, meta = stio.load(sys.argv[2], True)
exec(sys.argv[3])
stio.save(sys.argv[2], t, meta)
PY
}

@test "parity: an input tensor whose shape is not the batch's [B, T], exit 3 naming it" {
  restio_inputs "$D" 't["labels"] = t["labels"][:, :3].copy()'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [ "$stderr" = "parity: '$D/inputs.safetensors': tensor 'labels' has shape [2, 3], expected [2, 16]" ]
  B="$BATS_TEST_TMPDIR/bert"
  cp -r "$SHARED/parity/fixtures/bert" "$B" && chmod -R u+w "$B"
  restio_inputs "$B" 't["attention_mask"] = t["attention_mask"].reshape(-1)'
  run_split "$P" "$B" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "parity: '$B/inputs.safetensors': tensor 'attention_mask' has shape ["*"], expected [2, 16]" ]]
  E="$BATS_TEST_TMPDIR/encdec"
  cp -r "$SHARED/parity/fixtures/encdec" "$E" && chmod -R u+w "$E"
  restio_inputs "$E" 't["tgt_out"] = t["tgt_out"][:1].copy()'
  run_split "$P" "$E" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "parity: '$E/inputs.safetensors': tensor 'tgt_out' has shape [1, "*"], expected [2, "*"]" ]]
  [ ! -e "$BATS_TEST_TMPDIR/o" ]
}

@test "parity: an empty batch in the inputs, exit 3" {
  restio_inputs "$D" 't["input_ids"] = t["input_ids"][:0].copy(); t["labels"] = t["labels"][:0].copy()'
  run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
  [ "$status" -eq 3 ]
  [[ "$stderr" == "parity: '$D/inputs.safetensors': "*"input_ids"* ]]
}

# rewrite one metadata value of ref.safetensors in fixture directory $1
ref_meta() {
  /usr/bin/python3 - "$SHARED/parity" "$1/ref.safetensors" "$2" "$3" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import stio
t, meta = stio.load(sys.argv[2], True)
meta[sys.argv[3]] = sys.argv[4]
stio.save(sys.argv[2], t, meta)
PY
}

@test "parity: AdamW metadata that is not a finite number in range, exit 3 naming it" {
  for kv in "beta1 1e999" "beta2 nan" "lr inf" "eps -1" "beta1 1.5" "adam_steps 1e10" "adam_steps 2.5" "wd x"; do
    cp "$SHARED/parity/fixtures/gpt/ref.safetensors" "$D/ref.safetensors"
    chmod u+w "$D/ref.safetensors"
    set -- $kv
    ref_meta "$D" "$1" "$2"
    run_split "$P" "$D" "$BATS_TEST_TMPDIR/o"
    echo "$kv: $status $stderr"
    [ "$status" -eq 3 ]
    [[ "$stderr" == "parity: '$D/ref.safetensors': metadata '$1' "* ]]
    [ ! -e "$BATS_TEST_TMPDIR/o" ]
  done
}
