#!/usr/bin/env bash
# bench: gpt_small_gen gpt2_124m_gen gpt2_124m_gen_bf16 smollm_135m_gen smollm_135m_gen_bf16 mem_read_bw sample_gpt2_defaults sample_gpt2_top_p
#
# Greedy generation with the KV cache, batch 1, a 16-token prompt, new tokens
# up to the context (GPT small: 256, GPT-2 124M: 64), the prompt's pass
# included, model creation excluded: the workloads of the PyTorch peer
# (shared/peers/pytorch_bench.py), which runs right after ours with the same 2
# threads. 124M at batch 1 is a race for memory bandwidth (each new token reads
# every weight once), so the machine's read bandwidth is measured in the same
# run (mem_read_bw) and each figure comes with the bytes it moved per second
# (NAME_gbs). gpt2_124m_gen_bf16 is `generate --bf16`: bf16 weights, fp32
# arithmetic. sample_gpt2_defaults / sample_gpt2_top_p: microseconds to draw one
# token from GPT-2's 50,257 logits with generate's defaults (temperature 0.8,
# top-k 40, top-p 0.95) and with top-p 0.9 alone (no peer: a full sort of the
# vocabulary, as this tool did before, took 6.7 ms).
# smollm_135m_gen[_bf16]: the LLaMA block of SmolLM-135M's shape (30 layers, d 576,
# 9 heads over 3 KV heads, SwiGLU 1536, vocabulary 49,152, tied), random weights,
# 16 + 48 tokens as gpt2_124m, F32 and bf16 weights; llama.cpp's home ground (its
# GGUF from tools/bench/make_llama_gguf.py, F32 and F16).
set -u
T="${NLPIPE_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
"$T/genbench" bw -t $threads -r "$REPS" || exit 1
"$T/genbench" gen gpt_small -t $threads -r "$REPS" || exit 1
"$T/genbench" gen gpt2_124m -t $threads -r "$REPS" || exit 1
"$T/genbench" gen gpt2_124m -t $threads -r "$REPS" --bf16 || exit 1
"$T/genbench" gen smollm_135m -t $threads -r "$REPS" || exit 1
"$T/genbench" gen smollm_135m -t $threads -r "$REPS" --bf16 || exit 1
"$T/genbench" sample -r "$REPS" || exit 1
# llama.cpp, when built (shared/peers/llamacpp/README.md): LLAMA_BENCH=path/to/llama-bench and
# LLAMA_GGUF=DIR holding gpt-small-f32.gguf, gpt2-124m-f32.gguf (and gpt2-124m-f16.gguf for the
# bf16 line), smollm-135m-f32.gguf and smollm-135m-f16.gguf (tools/bench/make_llama_gguf.py
# OUT --ftype f32|f16, with GGUF_PY=<llama.cpp>/gguf-py). -pg 16,N times the prompt and N new
# tokens; new tokens/s = avg_ts·N/(16+N).
llama() { # NAME GGUF NEW
  [ -f "$LLAMA_GGUF/$2" ] || return 0
  "$LLAMA_BENCH" -m "$LLAMA_GGUF/$2" -t $threads -p 0 -n 0 -pg 16,$3 -r "$REPS" -o csv 2>/dev/null | tail -1 |
    awk -F, -v n="$1" -v k="$3" '{ gsub(/"/, "", $(NF-1)); printf "%s@llama.cpp\t%.1f\ttokens/s\n", n, $(NF-1) * k / (16 + k) }'
}
if [ "${PEERS:-1}" != 0 ] && [ -x "${LLAMA_BENCH:-}" ] && [ -d "${LLAMA_GGUF:-}" ]; then
  llama gpt_small_gen gpt-small-f32.gguf 240
  llama gpt2_124m_gen gpt2-124m-f32.gguf 48
  llama gpt2_124m_gen_bf16 gpt2-124m-f16.gguf 48
  llama smollm_135m_gen smollm-135m-f32.gguf 48
  llama smollm_135m_gen_bf16 smollm-135m-f16.gguf 48
fi
if [ "${PEERS:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$SHARED/peers/pytorch_bench.py" --only gpt_small_gen,gpt2_124m_gen \
    --threads $threads --reps "$REPS" 2>/dev/null |
    awk '$1 ~ /_gen$/ && $3 == "tokens/s" { printf "%s@pytorch\t%s\ttokens/s\n", $1, $2 }'
elif [ "${PEERS:-1}" != 0 ]; then
  echo "gen.sh: no PyTorch (tools/install-deps --bench): the peer is skipped" >&2
fi
