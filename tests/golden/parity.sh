#!/usr/bin/env bash
# tests/golden/parity.sh — the engine against the PyTorch reference
# (shared/parity/README.md, "Checking a parity output").
#   - always: the compact GPT fixture of tests/data/golden (the reference's
#     weights and batch, its logits, loss and first gradients of the small
#     tensors): tools/parity's output within compare.py's default tolerances,
#     checked by tests/golden/st-compare.py (standard library only);
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
