#!/usr/bin/env bash
# bench: data_mem_peak data_mem_model data_mem_stream data_mem_tokens_per_s data_mem_small_tokens_per_s
# needs: data/lm/train.txt
#
# Training data streamed from disk (issue 29): GPT small (the README's LM
# preset: L4 C256 H4, T256 B8, a byte-level BPE of 8,192 tokens, 2-byte ids)
# trained 50 steps on a token stream of DATA_MEM_GB GiB (default 4) made by
# repeating the stream of ../shared/data/lm/train.txt (4.6M tokens) with an
# end-of-text id between the copies, 2 threads. Figures: the peak resident
# memory of the whole process (getrusage through tools/benchtime), beside
# the model's own figure (pretrain --dry-run's total: parameters, gradients,
# Adam's moments, the activations of a micro-batch, data held in memory:
# none, the stream is mapped) and the stream's size; the training rate
# (tokens/s over steps 11-50, from the log) beside the same run on one copy
# of the stream (9 MB, in the page cache whole). Issue 29's acceptance: the
# peak below the model's figure + 300 MiB, the two rates equal within noise
# (compare them on a quiet machine). Needs DATA_MEM_GB GiB free in BENCH_TMP;
# the stream is removed afterwards.
set -u
B="${NLPIPE_BIN:-$(cd "$(dirname "$0")/../../bin" && pwd)}"
T="${NLPIPE_TOOLS:-$(cd "$(dirname "$0")/.." && pwd)}"
SHARED="${SHARED:-../shared}"
GB="${DATA_MEM_GB:-4}"
threads=2
dir="$(mktemp -d "${BENCH_TMP:-/tmp}/data_mem.XXXXXX")"
trap 'rm -rf "$dir"' EXIT
out() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }
cd "$dir" || exit 1

need=$((GB * 1024 * 1024 + 200 * 1024))
free_kb="$(df -Pk . | awk 'NR == 2 { print $4 }')"
if [ "$free_kb" -lt "$need" ]; then
  echo "data_mem.sh: $((free_kb / 1024)) MiB free in $dir, $((need / 1024)) MiB needed" >&2
  exit 1
fi
"$B/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 8192 -o tok.json "$SHARED/data/lm/train.txt" || exit 1
"$B/tokenize" -m tok.json --output-format bin -o one.bin "$SHARED/data/lm/train.txt" || exit 1
# the copies, each after an end-of-text id (the stream's own, bytes 16-17 of its header: width 2)
python3 - "$GB" <<'PY' || exit 1
import sys
gb = float(sys.argv[1])
b = open('one.bin', 'rb').read()
head, body, eot = b[:32], b[32:], b[16:18]
n = int(gb * (1 << 30) // (len(body) + 2)) + 1
with open('big.bin', 'wb') as f:
    f.write(head + body)
    for _ in range(n - 1):
        f.write(eot + body)
PY
stream_mib="$(du -m big.bin | cut -f1)"
echo "data_mem.sh: big.bin: $stream_mib MiB ($(( (stream_mib << 20) / 2 )) tokens)" >&2

args=(--preset small --tokenizer tok.json -t $threads --steps 50 --eval-every 0 --save-every 0 --no-progress --log-every 10)
model="$("$B/pretrain" "${args[@]}" --dry-run -m run big.bin | sed -n 's/^total: //p')"
model_mib="$(echo "$model" | awk '{ m["bytes"] = 1 / 1048576; m["KiB"] = 1 / 1024; m["MiB"] = 1; m["GiB"] = 1024; printf "%.1f", $1 * m[$2] }')"
line="$("$T/benchtime" -n 1 -- "$B/pretrain" "${args[@]}" --log big.tsv -m run big.bin)" || exit 1
peak="$(echo "$line" | cut -f2)"
rm -rf run
"$B/pretrain" "${args[@]}" --log one.tsv -m run1 one.bin 2>/dev/null || exit 1
rate() { awk -F'\t' 'NR > 1 && $1 > 10 { s += $7; n++ } END { printf "%.0f", s / n }' "$1"; }
out data_mem_peak "$peak" MiB
out data_mem_model "$model_mib" MiB
out data_mem_stream "$stream_mib" MiB
out data_mem_tokens_per_s "$(rate big.tsv)" tokens/s
out data_mem_small_tokens_per_s "$(rate one.tsv)" tokens/s
awk -v p="$peak" -v m="$model_mib" 'BEGIN { printf "data_mem.sh: peak %.1f MiB = the model'"'"'s %.1f + %.1f MiB (issue 29: below + 300)\n", p, m, p - m }' >&2
exit 0
