#!/usr/bin/env bash
# bench: gpt_small_gen gpt2_124m_gen gpt_small_gen_bf16 gpt2_124m_gen_bf16 gpt_small_gen_int8 gpt2_124m_gen_int8 smollm_135m_gen smollm_135m_gen_bf16 smollm_135m_gen_int8 mem_read_bw sample_gpt2_defaults sample_gpt2_top_p
#
# Greedy generation with the KV cache, batch 1, a 16-token prompt, new tokens
# up to the context (GPT small: 256, GPT-2 124M: 64), the prompt's pass
# included, model creation excluded: the workloads of the PyTorch peer
# (shared/peers/pytorch_bench.py) and of llama.cpp, each side with the same 2
# threads. 124M at batch 1 is a race for memory bandwidth (each new token reads
# every weight once), so the machine's read bandwidth is measured in the same
# run (mem_read_bw) and each figure comes with the bytes it moved per second
# (NAME_gbs). NAME_gen_bf16 is `generate --bf16` (bf16 weights, fp32
# arithmetic), NAME_gen_int8 `generate --int8` (int8 weights in blocks of 32,
# llama.cpp's Q8_0). sample_gpt2_defaults / sample_gpt2_top_p: microseconds to
# draw one token from GPT-2's 50,257 logits with generate's defaults
# (temperature 0.8, top-k 40, top-p 0.95) and with top-p 0.9 alone (no peer: a
# full sort of the vocabulary, as this tool did before, took 6.7 ms).
# smollm_135m_gen[_bf16|_int8]: the LLaMA block of SmolLM-135M's shape (30
# layers, d 576, 9 heads over 3 KV heads, SwiGLU 1536, vocabulary 49,152,
# tied), random weights, 16 + 48 tokens as gpt2_124m; llama.cpp's home ground
# (its GGUFs smollm-135m-{f32,f16,q8_0}.gguf from tools/bench/make_llama_gguf.py).
#
# Each side in its best configuration: ours as generate runs, whatever
# OMP_WAIT_POLICY says (a token's products run on nlpipe's own threads,
# base/pool.h); PyTorch with OMP_WAIT_POLICY=PASSIVE (about twice its speed
# with libgomp's spinning on these workloads); llama.cpp with its own
# busy-waiting threads. ROUNDS rounds (default 1) take turns, ours then the
# peers, and each figure is the median of its rounds.
#
# llama.cpp, when built (tools/bench/llamacpp SRC builds it and the GGUFs of
# these shapes into /tmp/nlpipe-peers/llamacpp; or LLAMA_BENCH=path/to/llama-bench
# and LLAMA_GGUF=DIR with gpt-small-{f32,f16,q8_0}.gguf and
# gpt2-124m-{f32,f16,q8_0}.gguf): F32 beside fp32, F16 beside bf16, Q8_0 beside
# int8. -pg 16,N times the prompt and N new tokens; new tokens/s =
# avg_ts·N/(16+N).
set -u -o pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/pytorch.bash"
T="${NLPIPE_TOOLS:-$(cd "$here/.." && pwd)}"
REPS="${REPS:-5}"
threads=2
only=" ${BENCH_ONLY:-} "
want() { [ "$only" = "  " ] || case "$only" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
acc="$(mktemp "${BENCH_TMP:-/tmp}/gen.XXXXXX")"
trap 'rm -f "$acc"' EXIT

LL="/tmp/nlpipe-peers/llamacpp"
LLAMA_BENCH="${LLAMA_BENCH:-$LL/llama-bench}"
LLAMA_GGUF="${LLAMA_GGUF:-$LL/gguf}"
llama_ok=0
if [ "${PEERS:-1}" != 0 ] && [ -x "$LLAMA_BENCH" ] && [ -d "$LLAMA_GGUF" ]; then llama_ok=1
elif [ "${PEERS:-1}" != 0 ]; then
  echo "gen.sh: no llama.cpp at $LLAMA_BENCH (tools/bench/llamacpp SRC builds it): its figures are skipped" >&2
fi
llama() { # NAME GGUF NEW
  [ $llama_ok = 1 ] && [ -f "$LLAMA_GGUF/$2" ] || return 0
  "$LLAMA_BENCH" -m "$LLAMA_GGUF/$2" -t $threads -p 0 -n 0 -pg 16,$3 -r "$REPS" -o csv 2>/dev/null | tail -1 |
    awk -F, -v n="$1" -v k="$3" '{ gsub(/"/, "", $(NF-1)); printf "%s@llama.cpp\t%.1f\ttokens/s\n", n, $(NF-1) * k / (16 + k) }'
}
peer=0
if pytorch_ok; then peer=1
elif [ "${PEERS:-1}" != 0 ]; then
  echo "gen.sh: no PyTorch (tools/install-deps --bench): the peer is skipped" >&2
fi

want mem_read_bw && { "$T/genbench" bw -t $threads -r "$REPS" || exit 1; }
for r in $(bench_rounds); do
  for model in gpt_small gpt2_124m smollm_135m; do
    case $model in gpt_small) g=gpt-small; new=240 ;; gpt2_124m) g=gpt2-124m; new=48 ;; *) g=smollm-135m; new=48 ;; esac
    if want ${model}_gen; then
      "$T/genbench" gen $model -t $threads -r "$REPS" >>"$acc" || exit 1
      llama ${model}_gen $g-f32.gguf $new >>"$acc"
      [ $peer = 1 ] && [ $model != smollm_135m ] && pytorch_peer ${model}_gen >>"$acc"
    fi
    if want ${model}_gen_bf16; then
      "$T/genbench" gen $model -t $threads -r "$REPS" --bf16 >>"$acc" || exit 1
      llama ${model}_gen_bf16 $g-f16.gguf $new >>"$acc"
    fi
    if want ${model}_gen_int8; then
      "$T/genbench" gen $model -t $threads -r "$REPS" --int8 >>"$acc" || exit 1
      llama ${model}_gen_int8 $g-q8_0.gguf $new >>"$acc"
    fi
  done
done
bench_median <"$acc"
if want sample_gpt2_defaults || want sample_gpt2_top_p; then "$T/genbench" sample -r "$REPS" || exit 1; fi
