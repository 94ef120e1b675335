#!/usr/bin/env bash
# tests/golden/parity.sh — the engine against the PyTorch reference
# (shared/parity/README.md, "Checking a parity output").
#   - always: the compact GPT fixture of tests/data/golden (the reference's
#     weights and batch, its logits, loss and first gradients of the small
#     tensors): tools/parity's output within compare.py's default tolerances,
#     checked by tests/golden/st-compare.py (standard library only);
#   - always: the sets of tests/data/parity (rotary positions in both layouts,
#     grouped keys and values, the LLaMA block in HF's layout with F32, BF16
#     shards and F16, from the in-repo reference tools/parity-ref): logits,
#     loss, gradients and one AdamW step by st-compare.py, and generate's
#     greedy continuations (with --bf16 for the bf16 set) against the
#     reference's; the T5-style encoder-decoder set (tools/parity-t5:
#     relative position bias, RMSNorm, no biases, gated GELU) the same way,
#     with translate's greedy and beam-4 outputs;
#   - with ../shared: for every fixture set in $SHARED/parity/fixtures,
#     tools/parity writes logits, losses, gradients and AdamW steps, and the
#     README's six compare.py commands must all exit 0 (python3 with numpy,
#     never PyTorch).
# Prints one line per check and ends with "N passed, N failed[, N skipped]".
set -u
top="$(cd "$(dirname "$0")/../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
TOOLS="${NLPIPE_TOOLS:-$top/tools}"
PY=/usr/bin/python3
fx="$SHARED/parity/fixtures"
tmp="$(mktemp -d "${NLPIPE_TMP:-/tmp}/parity.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skip=0
check() { # name, then the command
  local name="$1"; shift
  if "$@" >"$tmp/log" 2>&1; then
    pass=$((pass + 1)); echo "ok   $name: $(tail -1 "$tmp/log")"
  else
    fail=$((fail + 1)); echo "FAIL $name"; grep -E 'FAIL|error|compared' "$tmp/log" | head -20 | sed 's/^/    /'
  fi
}
# the compact fixture carried in the repository
c="$top/tests/data/golden/parity/fixtures/gpt"
check "repo gpt: tools/parity" "$TOOLS/parity" "$c" "$tmp/repo-gpt.safetensors"
if [ -f "$tmp/repo-gpt.safetensors" ]; then
  check "repo gpt: logits, loss, first gradients (1e-4/1e-5)" python3 "$top/tests/golden/st-compare.py" \
    "$c/ref.safetensors" "$tmp/repo-gpt.safetensors"
fi
# rotary positions and the LLaMA block (tools/parity-llama makes them)
BIN="${NLPIPE_BIN:-$top/bin}"
for d in "$top"/tests/data/parity/*/; do
  d="${d%/}"; set="$(basename "$d")"; out="$tmp/repo-$set.safetensors"
  check "repo $set: tools/parity" "$TOOLS/parity" "$d" "$out"
  [ -f "$out" ] || continue
  check "repo $set: logits, loss, gradients, AdamW step (1e-4/1e-5)" python3 "$top/tests/golden/st-compare.py" \
    "$d/ref.safetensors" "$out"
  n=$(head -1 "$d/decode/greedy.txt" | wc -w)
  if [ -f "$d/decode/beam4.txt" ]; then # an encoder-decoder (tools/parity-t5): translate greedy and beam 4
    tr() { "$BIN/translate" -m "$d" --input-format id --output-format id --max-length "$n" --batch-size 3 "$@" \
             <"$d/decode/prompts.txt"; }
    trg() { tr -b 1 | diff - "$d/decode/greedy.txt"; }
    trb() { tr -b 4 --length-penalty 0.6 | diff - "$d/decode/beam4.txt"; }
    check "repo $set: translate greedy" trg
    check "repo $set: translate beam 4" trb
    continue
  fi
  gen() { "$BIN/generate" -m "$d" --input-format id --output-format id --greedy -n "$n" "$@" <"$d/decode/prompts.txt" |
            diff - "$d/decode/greedy.txt"; }
  check "repo $set: generate --greedy" gen
  case "$set" in *bf16*) check "repo $set: generate --greedy --bf16" gen --bf16 ;; esac
done
if [ ! -d "$fx" ]; then
  echo "# skipped the full fixture sets: no '$fx' (../shared); the compact GPT fixture ran"
  echo "$pass passed, $fail failed, 1 skipped"
  [ "$fail" -eq 0 ]
  exit
fi

KB='grad\.(step2\.)?.*(c_attn|attention\.self\.key|k_proj)\.bias$'
for d in "$fx"/*/; do
  d="${d%/}"; set="$(basename "$d")"; out="$tmp/$set.safetensors"
  check "$set: tools/parity" "$TOOLS/parity" "$d" "$out"
  [ -f "$out" ] || continue
  cmp() { "$PY" "$SHARED/parity/compare.py" "$d/ref.safetensors" "$out" --quiet "$@"; }
  check "$set: outputs and losses (1e-4/1e-5)" cmp --skip '^(grad|adamw)\.'
  check "$set: gradients (1e-4/1e-5)" cmp --prefix grad. --skip "$KB"
  check "$set: gradients (rel. L2 1e-3)" cmp --prefix grad. --skip "$KB" --l2 1e-3
  check "$set: key-bias gradients (atol 1e-5)" cmp --skip "^(?!$KB)" --rtol 0 --atol 1e-5
  check "$set: AdamW steps (1e-4/1e-5)" cmp --prefix adamw.
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
