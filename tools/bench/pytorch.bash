# tools/bench/pytorch.bash — sourced by the benchmarks whose peer is PyTorch
# (shared/peers/pytorch_bench.py); not a benchmark itself.
#
# Debian's torch does its fp32 products through OpenBLAS, which picks its kernels
# from its own table of CPUs. On a CPU newer than its table (OpenBLAS 0.3.21 on
# an Emerald Rapids Xeon: "Core: Prescott") it falls back to SSE3 kernels at a
# sixth of the AVX-512 rate, and an environment may pin an older core
# (OPENBLAS_CORETYPE=Haswell on this workplace's AMD machines). A figure against
# such a peer flatters us, so the peer runs twice where that happens: as the
# machine has it (NAME@pytorch), and with OpenBLAS's best core for the CPU's
# instruction set forced and OPENBLAS_L2_SIZE unset (NAME@pytorch/CORE). Claims
# hold against the faster of the two.
#
#   pytorch_best_core   OpenBLAS's best core name for this CPU (SkylakeX, Haswell
#                       or empty)
#   pytorch_core [ENV]  the core OpenBLAS picks under ENV (VAR=VALUE words)
#   pytorch_peer NAMES [REPS]   runs the peer on NAMES (comma-separated) and
#                       prints NAME@pytorch[/CORE]<TAB>VALUE<TAB>UNIT lines (the
#                       units of our figures: sentences/s for *_beam, tgt
#                       tokens/s for encdec_train*, else tokens/s); names that
#                       end in _bf16 run under the peer's --bf16 (CPU autocast)
PYTORCH_BENCH="${SHARED:-../shared}/peers/pytorch_bench.py"

pytorch_ok() {
  [ "${PEERS:-1}" != 0 ] && [ -r "$PYTORCH_BENCH" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null
}

pytorch_best_core() {
  local f; f=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  has() { local w; for w; do case "$f" in *" $w "*) ;; *) return 1 ;; esac; done; }
  if has avx512f avx512cd avx512bw avx512vl avx512dq; then echo SkylakeX
  elif has avx2 fma; then echo Haswell
  fi
}

pytorch_core() {
  env "$@" OPENBLAS_VERBOSE=2 /usr/bin/python3 -c 'import torch; (torch.ones(64, 64) @ torch.ones(64, 64)).sum()' 2>&1 |
    sed -n 's/^Core: //p' | head -1
}

pytorch_peer() { # NAMES [REPS]
  local names="$1" reps="${2:-${REPS:-5}}" best have fp="" bf="" n
  for n in ${names//,/ }; do
    case $n in *_bf16) bf="$bf${bf:+,}${n%_bf16}" ;; *) fp="$fp${fp:+,}$n" ;; esac
  done
  best="$(pytorch_best_core)"
  have="$(pytorch_core)"
  echo "bench: PyTorch's OpenBLAS runs its '${have:-?}' kernels here (best for this CPU: ${best:-none known})" >&2
  run_peer() { # ENV...
    [ -z "$fp" ] || env "$@" OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$PYTORCH_BENCH" --only "$fp" --threads 2 --reps "$reps" 2>/dev/null
    [ -z "$bf" ] || env "$@" OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$PYTORCH_BENCH" --only "$bf" --bf16 --threads 2 --reps "$reps" 2>/dev/null
  }
  filter() { # SUFFIX
    awk -v s="$1" -v want=",$names," 'index(want, "," $1 ",") && $2 ~ /^[0-9.]+$/ {
        u = $1 ~ /_beam$/ ? "sentences/s" : $1 ~ /^encdec_train/ ? "tgt tokens/s" : "tokens/s"
        printf "%s@pytorch%s\t%s\t%s\n", $1, s, $2, u }'
  }
  run_peer | filter ""
  if [ -n "$best" ] && [ "$have" != "$best" ]; then
    run_peer -u OPENBLAS_L2_SIZE OPENBLAS_CORETYPE="$best" | filter "/$best"
  fi
}

# bench_rounds: ROUNDS (default 1) rounds of ours and the peer, interleaved, so
# that a slow minute of a shared machine falls on both sides.
# bench_median: lines NAME<TAB>VALUE<TAB>UNIT on stdin (several rounds) -> the
# median of each NAME, in the order NAMEs first appear.
bench_rounds() { seq "${ROUNDS:-1}"; }
bench_median() {
  awk -F'\t' 'NF == 3 { if (!($1 in n)) order[k++] = $1; v[$1, ++n[$1]] = $2; unit[$1] = $3 }
    END {
      for (i = 0; i < k; i++) {
        name = order[i]; m = n[name]
        for (a = 1; a <= m; a++) x[a] = v[name, a] + 0
        for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
        med = m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
        printf "%s\t%s\t%s\n", name, med, unit[name]
      }
    }'
}
