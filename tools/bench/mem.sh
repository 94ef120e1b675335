#!/usr/bin/env bash
# bench: gpt2_124m_train_mem gpt2_124m_gen_mem
#
# Peak resident memory (MiB, the whole process) of GPT-2 124M training
# (T64 B4, fp32, AdamW: weights, gradients, two moments and activations) and
# generation (greedy, batch 1, KV cache), 2 threads: ours through
# tools/trainbench and tools/genbench (one timed repetition after the warm-up),
# the PyTorch peer through shared/peers/pytorch_bench.py --reps 1 on the same
# workload, each measured by tools/benchtime (getrusage of the child). Both
# hold 124M parameters in fp32 (497 MB each copy); the rest is what each
# design adds. PyTorch's figure includes its interpreter and libraries
# (python3 -c 'import torch' alone is reported on stderr).
set -u
T="${NLPIPE_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)}"
SHARED="${SHARED:-../shared}"
threads=2
peak() { "$T/benchtime" -n 1 -- "$@" | cut -f2; }
want() { [ -z "${BENCH_ONLY:-}" ] || case " $BENCH_ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
torch=0
[ "${PEERS:-1}" != 0 ] && /usr/bin/python3 -c 'import torch' 2>/dev/null && torch=1
if [ $torch = 1 ]; then
  echo "mem.sh: python3 -c 'import torch' alone: $(peak /usr/bin/python3 -c 'import torch') MiB" >&2
fi
if want gpt2_124m_train_mem; then
  printf 'gpt2_124m_train_mem\t%s\tMiB\n' "$(peak "$T/trainbench" train gpt2_124m -t $threads -r 1)"
  [ $torch = 1 ] && printf 'gpt2_124m_train_mem@pytorch\t%s\tMiB\n' \
    "$(OMP_WAIT_POLICY=PASSIVE peak /usr/bin/python3 "$SHARED/peers/pytorch_bench.py" --only gpt2_124m_train --threads $threads --reps 1)"
fi
if want gpt2_124m_gen_mem; then
  printf 'gpt2_124m_gen_mem\t%s\tMiB\n' "$(peak "$T/genbench" gen gpt2_124m -t $threads -r 1)"
  [ $torch = 1 ] && printf 'gpt2_124m_gen_mem@pytorch\t%s\tMiB\n' \
    "$(OMP_WAIT_POLICY=PASSIVE peak /usr/bin/python3 "$SHARED/peers/pytorch_bench.py" --only gpt2_124m_gen --threads $threads --reps 1)"
fi
exit 0
