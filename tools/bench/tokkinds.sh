#!/usr/bin/env bash
# bench: encode_gpt2_prose encode_gpt2_code encode_gpt2_logs encode_gpt2_cjk encode_gpt2_chat encode_gpt2_oneline load_gpt2 load_tokjson load_vocabtxt
# needs: data/lm/train.txt vectors/tokenize/gpt2 vectors/tokenize/bert-base-uncased-vocab.txt
#
# GPT-2 encoding on several kinds of text, 1 MB each (MB = 1e6 bytes), one
# thread, as a whole process: `tokenize -m gpt2/ -t 1 FILE > /dev/null`,
# loading GPT-2's files included. Peer: tiktoken 1.0.22 on the same file
# (its encode loop only, line by line, one thread).
#
#   encode_gpt2_prose    the first 1 MB of shared/data/lm/train.txt
#   encode_gpt2_code     C headers from /usr/include (libc6-dev), concatenated
#   encode_gpt2_logs     machine-made trace and log lines: timestamps, long hex
#                        addresses and decimal counters in aligned columns, few
#                        repeated words (made here by a fixed-seed awk program)
#   encode_gpt2_cjk      Japanese, Korean and Chinese: vim's tutor translations
#                        (vim-runtime; skipped when absent), repeated to 1 MB
#   encode_gpt2_chat     short chat messages (lines of the prose cut into a few
#                        words each) with emoji after most: single code points,
#                        skin tones, ZWJ sequences and flags (fixed-seed awk)
#   encode_gpt2_oneline  the prose of encode_gpt2_prose as one line
#
#   load_gpt2 / load_tokjson / load_vocabtxt  milliseconds for the whole process
#                        `tokenize -m X -t 1 < /dev/null`: GPT-2's encoder.json +
#                        vocab.bpe, GPT-2 as a tokenizer.json (written by HF
#                        tokenizers, so skipped without the npm peers), and BERT's
#                        vocab.txt; `tokenize --version` beside them is what any
#                        process of ours costs before it loads anything.
#
# ROUNDS (default 1): rounds of ours and the peer, interleaved; each figure is
# the median of the rounds (each round's figure is printed on stderr).
# Environment as tools/bench/run sets it (see tokenize.sh).
. "$(dirname "$0")/peers.bash"
GPT2="$SHARED/vectors/tokenize/gpt2"
K="$TMP/kinds"
mkdir -p "$K"
MB=1000000

# --- the corpora (made once, kept in $TMP/kinds)
take() { head -c $MB | iconv -f utf-8 -t utf-8 -c; } # 1 MB, no character cut in two
[ -s "$K/prose.txt" ] || head -c $MB "$CORPUS" | iconv -f utf-8 -t utf-8 -c >"$K/prose.txt"
[ -s "$K/oneline.txt" ] || { tr '\n' ' ' <"$K/prose.txt"; echo; } >"$K/oneline.txt"
[ -s "$K/code.txt" ] || find /usr/include -name '*.h' -size +4k 2>/dev/null | LC_ALL=C sort | xargs cat 2>/dev/null | take >"$K/code.txt"
[ -s "$K/logs.txt" ] || awk 'BEGIN {
    srand(42); t = 1732600000.123456
    split("kworker/0:1 systemd-journal sshd nginx postgres kswapd0 rcu_sched jbd2/sda1-8 containerd irq/24-nvme0q1", comm, " ")
    split("sched_switch sys_enter_read sys_exit_write block_rq_issue page_fault_user irq_handler_entry mm_filemap_add_to_page_cache net_dev_xmit", ev, " ")
    split("INFO WARN DEBUG ERROR", lvl, " ")
    for (n = 0; n < 14000; n++) {
      t += rand() * 0.01
      c = comm[int(rand() * 10) + 1]
      if (rand() < 0.6)
        printf "%16s-%-6d [%03d] d..%d. %17.6f: %-28s addr=0x%08x%08x len=%d sector=%d flags=0x%x\n", c, int(rand() * 65536), int(rand() * 64),
               int(rand() * 4), t, ev[int(rand() * 8) + 1] ":", int(rand() * 2^31), int(rand() * 2^32), int(rand() * 65536),
               int(rand() * 2^31), int(rand() * 4096)
      else
        printf "%s %-5s [%s:%d] req=%08x-%04x-%04x rtt=%.3fms bytes=%d seq=%d cpu=%.1f%% mem=%dkB\n", strftime("%Y-%m-%dT%H:%M:%S", int(t), 1),
               lvl[int(rand() * 4) + 1], c, int(rand() * 65536), int(rand() * 2^32), int(rand() * 65536), int(rand() * 65536),
               rand() * 250, int(rand() * 10^7), int(rand() * 10^9), rand() * 100, int(rand() * 2^24)
    } }' | take >"$K/logs.txt"
cjk=""
for f in /usr/share/vim/vim9*/tutor/tutor.{ja,ko,zh_cn,zh_tw}.utf-8; do [ -f "$f" ] && cjk="$cjk $f"; done
if [ -n "$cjk" ] && [ ! -s "$K/cjk.txt" ]; then
  # shellcheck disable=SC2086
  for ((i = 0; i < 40; i++)); do cat $cjk; done | take >"$K/cjk.txt"
fi
[ -s "$K/chat.txt" ] || awk 'BEGIN {
    srand(7)
    n = split("😀 😂 🤣 😍 🙏 👍 👍🏽 👋🏿 🔥 ✨ 🎉 💯 😭 🥺 ❤️ 🤔 🙈 😅 🚀 ✅ 👨‍👩‍👧 🧑🏻‍💻 🏳️‍🌈 🇩🇪 🇯🇵 🤷‍♀️ 💀 🥳 😎 👀", e, " ")
    split("alex sam kim jo rin mo", who, " ")
  }
  NF > 0 {
    for (i = 1; i <= NF; ) {
      k = 2 + int(rand() * 9); msg = ""
      for (j = 0; j < k && i <= NF; j++) msg = msg (j ? " " : "") $(i++)
      r = rand(); tail = ""
      if (r < 0.85) { m = 1 + int(rand() * 3); for (q = 0; q < m; q++) tail = tail e[int(rand() * n) + 1] }
      printf "%s: %s %s\n", who[int(rand() * 6) + 1], tolower(msg), tail
    }
  }' "$CORPUS" | take >"$K/chat.txt"

# --- encoding, whole process
for kind in prose code logs cjk chat oneline; do
  name=encode_gpt2_$kind
  want $name || continue
  f="$K/$kind.txt"
  if [ ! -s "$f" ]; then
    echo "bench: $name skipped: no corpus (for cjk: vim-runtime's tutor files)" >&2
    printf '%s\tskipped\tno corpus\n' "$name"
    continue
  fi
  b=$(stat -c %s "$f")
  # ROUNDS rounds of ours then the peer, interleaved (a slow minute of a
  # shared machine falls on both), each side's median of the rounds' medians
  ours="" peer=""
  for ((round = 1; round <= ${ROUNDS:-1}; round++)); do
    r=$("$TOOLS/benchtime" -n "$REPS" -w 1 -- "$BIN/tokenize" -m "$GPT2" -t 1 "$f") || exit 1
    s=$(cut -f1 <<<"$r")
    o=$(awk -v b="$b" -v s="$s" 'BEGIN { printf "%.2f", b / 1e6 / s }')
    ours="$ours $o"
    if [ $peers_ok = 1 ]; then
      line=$(node "$PEERDIR/tiktoken-encode.js" tiktoken "$f" none --reps "$REPS" 2>&1 >/dev/null | grep 'MB/s=')
      t=$(sed -E 's/.*MB\/s=([0-9.]+).*/\1/' <<<"$line")
      peer="$peer $t"
      echo "bench: $name round $round: $b bytes, $(wc -l <"$f") lines, median ${s}s over $REPS runs = $o MB/s; tiktoken: $line" >&2
    else
      echo "bench: $name round $round: $b bytes, $(wc -l <"$f") lines, median ${s}s over $REPS runs = $o MB/s" >&2
    fi
  done
  printf '%s\t%s\tMB/s\n' "$name" "$(tr ' ' '\n' <<<"$ours" | grep . | median)"
  [ -z "$peer" ] || printf '%s@tiktoken\t%s\tMB/s\n' "$name" "$(tr ' ' '\n' <<<"$peer" | grep . | median)"
done

# --- loading, whole process
ms() { "$TOOLS/benchtime" -n "$((REPS * 4))" -w 1 -i /dev/null -- "$@" | awk -F'\t' '{ printf "%.1f", $1 * 1000 }'; }
if want load_gpt2 || want load_tokjson || want load_vocabtxt; then
  echo "bench: any process of ours: tokenize --version in $(ms "$BIN/tokenize" --version) ms" >&2
fi
if want load_gpt2; then printf 'load_gpt2\t%s\tms\n' "$(ms "$BIN/tokenize" -m "$GPT2" -t 1)"; fi
if want load_tokjson; then
  if [ $peers_ok = 1 ] && { [ -s "$K/gpt2-tokenizer.json" ] ||
       node -e 'require(process.argv[1]).load("gpt2").then(t => t.save(process.argv[2]))' "$PEERDIR/lib.js" "$K/gpt2-tokenizer.json"; }; then
    printf 'load_tokjson\t%s\tms\n' "$(ms "$BIN/tokenize" -m "$K/gpt2-tokenizer.json" -t 1)"
  else
    echo "bench: load_tokjson skipped: GPT-2's tokenizer.json is written by HF tokenizers (npm peers)" >&2
    printf 'load_tokjson\tskipped\tno npm peers\n'
  fi
fi
if want load_vocabtxt; then
  printf 'load_vocabtxt\t%s\tms\n' "$(ms "$BIN/tokenize" -m "$SHARED/vectors/tokenize/bert-base-uncased-vocab.txt" -t 1)"
fi
