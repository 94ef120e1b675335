#!/usr/bin/env bash
# tools/bench/learn/positions.sh DIR [MINUTES] — what rotary positions and the
# LLaMA block are worth (issue 27): three runs of the LM recipe (lm.sh: GPT
# `small`, ../shared/data/lm, 2 threads) for MINUTES each (default 15), one
# after the other, with learned positions (the default), with --positions rope,
# and as --arch llama (RMSNorm, SwiGLU of d_ff 768, rotary positions, 2 KV heads
# of 4, tied output: 5.25M parameters beside GPT small's 5.32M). Each model is
# scored on lm/valid.txt with `generate --perplexity` in windows of 256 tokens
# (the trained length) and of 512 (twice it: rotary positions extrapolate, a
# learned table of 256 has no row for it). Writes DIR/VARIANT/ (lm.sh's files),
# DIR/positions.tsv (variant, steps, minutes, parameters, bpb@256, bpb@512)
# and DIR/positions.png (the three validation curves).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
SHARED="${SHARED:-$top/../shared}"
PATH="$top/bin:$PATH"
dir="${1:?usage: positions.sh DIR [MINUTES]}"
minutes="${2:-15}"
mkdir -p "$dir"
train-bpe --byte-level --special-tokens '<|endoftext|>' --vocab-size 8192 -q -o "$dir/tok.json" "$SHARED/data/lm/train.txt"
run() { # VARIANT [PRETRAIN OPTION]...
  local v="$1"
  shift
  mkdir -p "$dir/$v"
  cp "$dir/tok.json" "$dir/$v/tok.json"
  [ -e "$dir/$v/run/latest" ] || "$here/lm.sh" "$dir/$v" "$minutes" "$@" 2>"$dir/$v/pretrain.err"
}
run learned
run rope --positions rope
run llama --arch llama
bpb() { generate -m "$1" -t 2 --perplexity "$SHARED/data/lm/valid.txt" "${@:2}" | sed 's/.*"bits_per_byte": *\([0-9.]*\).*/\1/'; }
{
  printf 'variant\tsteps\tminutes\tparameters\tbpb_256\tbpb_512\n'
  for v in learned rope llama; do
    r="$dir/$v/run"
    last="$(tail -1 "$dir/$v/lm.tsv")"
    steps="$(cut -f1 <<<"$last")" mins="$(cut -f3 <<<"$last")"
    params="$(generate -m "$r" -v -t 2 --perplexity "$SHARED/data/lm/valid.txt" 2>&1 >/dev/null |
      sed -n 's/.*: \([0-9]*\) parameters.*/\1/p' | head -1)"
    b256="$(bpb "$r" --max-length 256)"
    if [ $v = learned ]; then b512="n/a"; else b512="$(bpb "$r" --max-length 512)"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$steps" "$mins" "${params:-?}" "$b256" "$b512"
  done
} >"$dir/positions.tsv"
cat "$dir/positions.tsv"
"$top/tools/plot-log" -x minutes -y bpb --title "GPT small on lm: positions (${minutes} min each)" -o "$dir/positions.png" \
  "$dir/learned/lm.tsv=learned positions" "$dir/rope/lm.tsv=rotary (--positions rope)" "$dir/llama/lm.tsv=LLaMA block (--arch llama)"
