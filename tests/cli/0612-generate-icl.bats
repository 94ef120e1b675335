#!/usr/bin/env bats
# generate --score (a continuation's log-probability given a context) and
# --eval-choices (in-context learning: shots, candidates, normalization,
# accuracy) on a tiny model trained for a few steps: the scores against
# --perplexity's, the prompt cut to the context, a task whose answer is
# known, the shots' draw, and misuse.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  cat "$NLPIPE_TOP/tools/demo-data/ref.de" "$NLPIPE_TOP/tools/demo-data/hyp.de" >"$W/corpus.txt"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o "$W/tok.json" "$W/corpus.txt"
  # a tiny model (64 positions) that has learned a little of the corpus
  "$NLPIPE_BIN/pretrain" --preset tiny --max-length 32 -B 8 -t 1 --steps 150 --lr 3e-3 --warmup 10 -q \
    --tokenizer "$W/tok.json" -m "$W/run" "$W/corpus.txt"
  # choice items whose answer is known: a line's first three words, its rest, and three strings of
  # punctuation the corpus never has; the right one at 0, 1, 2, 3, 0, ...
  /usr/bin/python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
garb = ["~^~ #|# ]]", "{]}{] @@ ^^", "|~| `` ##", "@@ ^] ~~|"]
out, n = [], 0
for l in open(w + "/corpus.txt"):
    words = l.split()
    if len(words) < 6:
        continue
    ch = [garb[(n + j) % 4] for j in range(3)]
    ch.insert(n % 4, " ".join(words[3:]))
    out.append("\t".join([str(n % 4), " ".join(words[:3])] + ch))
    n += 1
    if n == 8:
        break
open(w + "/known.tsv", "w").write("\n".join(out) + "\n")
PY
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
}

# the ids of a text under the fixture's tokenizer, on one line
ids() { printf '%s' "$1" | "$NLPIPE_BIN/tokenize" -m "$W/tok.json" --output-format id; }

# field F of every JSON line of standard input (python's repr), one a line
jfield() { /usr/bin/python3 -c 'import sys, json
for l in sys.stdin: print(json.loads(l)[sys.argv[1]])' "$1"; }

@test "generate --score: the continuation's log-probability is the sum of --perplexity's terms on the same tokens" {
  # tolerance 1e-4 nats: --perplexity prints its mean loss to 6 decimals (times ~30 tokens), and
  # the two passes batch other rows together (the same terms up to the products' rounding)
  for n in 1 2 5; do
    line="$(sed -n "${n}p" "$W/corpus.txt")"
    run_split generate -m "$W/run" -t 1 --perplexity <<<"$line"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    total="$(/usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(-d["loss"] * d["tokens"])' "$output")"
    tokens="$(jfield tokens <<<"$output")"
    # the first token as context, every other one scored
    set -- $(ids "$line")
    run_split generate -m "$W/run" -t 1 --score --input-format id <<<"$1	${*:2}"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(jfield tokens <<<"$output")" = "$tokens" ]
    [ "$(jfield context_tokens <<<"$output")" = 1 ]
    /usr/bin/python3 - "$output" "$total" <<'PY' || { echo "line $n: $output vs $total"; false; }
import json, sys
d = json.loads(sys.argv[1])
assert abs(d["logprob"] - float(sys.argv[2])) < 1e-4, (d["logprob"], sys.argv[2])
assert abs(sum(d["token_logprobs"]) - d["logprob"]) < 1e-5 * len(d["token_logprobs"])
assert len(d["token_logprobs"]) == d["tokens"] and all(x < 0 for x in d["token_logprobs"])
assert d["greedy"] in (True, False) and d["bytes"] > 0
PY
    # each token alone after all those before it: lines of every length, batched together
    args=("$@")
    for ((k = 1; k < ${#args[@]}; k++)); do printf '%s\t%s\n' "${args[*]:0:k}" "${args[k]}"; done >"$T/splits.txt"
    run_split generate -m "$W/run" -t 1 --score --input-format id "$T/splits.txt"
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(wc -l <<<"$output")" -eq "$tokens" ]
    jfield logprob <<<"$output" | /usr/bin/python3 -c 'import sys
s = sum(float(x) for x in sys.stdin)
assert abs(s - float(sys.argv[1])) < 1e-4, (s, sys.argv[1])' "$total"
  done
}

@test "generate --score: text lines score as their tokens do; an empty context starts from end-of-text" {
  # 'context<TAB>continuation': each side encoded alone (here the same tokens as the line whole)
  ctx="Fehler beim"
  cont=" Importieren des Kalenders"
  [ "$(ids "$ctx$cont")" = "$(ids "$ctx") $(ids "$cont")" ]
  run_split generate -m "$W/run" -t 1 --score <<<"$ctx	$cont"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  text="$output"
  [ "$(jfield bytes <<<"$text")" = "${#cont}" ]
  run_split generate -m "$W/run" -t 1 --score --input-format id <<<"$(ids "$ctx")	$(ids "$cont")"
  [ "$status" -eq 0 ]
  [ "$output" = "$text" ]
  # no context: the end-of-text token (id 0) before the continuation, as a document starts
  run_split generate -m "$W/run" -t 1 --score <<<"	$cont"
  [ "$status" -eq 0 ]
  a="$output"
  run_split generate -m "$W/run" -t 1 --score --input-format id <<<"0	$(ids "$cont")"
  [ "$output" = "$a" ]
  [ "$(jfield context_tokens <<<"$a")" = 1 ]
  # one line, many: the same answers (a CRLF line too)
  printf '%s\t%s\r\n%s\t%s\n' "$ctx" "$cont" "$ctx" "$cont" >"$T/two.txt"
  run_split generate -m "$W/run" -t 1 --score "$T/two.txt"
  [ "$output" = "$text"$'\n'"$text" ]
}

@test "generate --score: a context too long loses its start (a warning); a continuation too long is an error naming the line" {
  cont="$(ids " wird nicht mehr")"
  nc="$(wc -w <<<"$cont")"
  ctx="$(for i in 1 2 3 4; do ids "Kritischer Fehler, Kile wird nicht mehr zuverlässig funktionieren "; done | tr '\n' ' ')"
  set -- $ctx
  [ $# -gt 64 ]
  run_split generate -m "$W/run" -t 1 --score --input-format id <<<"$ctx	$cont"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"line 1: the context loses its first $(($# - 64 + nc)) of $# tokens"*"context of 64"* ]]
  [ "$(jfield context_tokens <<<"$output")" = $((64 - nc)) ]
  cut="$output"
  # the same as the context's end given alone
  args=("$@")
  run_split generate -m "$W/run" -t 1 --score --input-format id <<<"${args[*]: -$((64 - nc))}	$cont"
  [ "$output" = "$cut" ]
  [ -z "$stderr" ]
  # --max-length: a shorter context
  run_split generate -m "$W/run" -t 1 --score --input-format id --max-length 16 <<<"$ctx	$cont"
  [ "$status" -eq 0 ]
  [ "$(jfield context_tokens <<<"$output")" = $((16 - nc)) ]
  # a continuation that fills the context: line 2 named, exit 1
  run_split generate -m "$W/run" -t 1 --score --input-format id <<<"1 2	3 4"$'\n'"1	$ctx"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'-' line 2: the continuation has $# tokens; the model's context of 64 leaves none for the context"* ]]
}

@test "generate --score: lines it cannot score" {
  while IFS='|' read -r input want; do
    run_split generate -m "$W/run" -t 1 --score <<<"$(printf "$input")"
    [ "$status" -eq 1 ] || { echo "'$input': status $status: $stderr"; false; }
    [[ "$stderr" == *"$want"* ]] || { echo "'$input': $stderr"; false; }
  done <<'EOF'
ok\tfine\nno tab here|'-' line 2: no tab: --score reads 'context<TAB>continuation' lines
a\tb\tc|'-' line 1: more than one tab
Fehler\t|'-' line 1: an empty continuation: nothing to score
EOF
  run_split generate -m "$W/run" --score --input-format id <<<"1 2	999"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"line 1: id 999 is not below the model's vocabulary size 400"* ]]
  # usage
  for bad in "-p x" "--batch" "--perplexity" "-b 2" "--echo" "--output-format id" "--eval-choices $W/known.tsv" "--shots 1"; do
    run_split generate -m "$W/run" --score $bad </dev/null
    [ "$status" -eq 2 ] || { echo "--score $bad: $status $stderr"; false; }
  done
}

@test "generate --eval-choices: a task whose answer is known; the accuracy from each item's scores, per normalization" {
  # the right answer is the rest of a corpus line, the others punctuation: per token (and per
  # byte) it always wins; summed, the short wrong ones win (fewer terms): the normalization decides
  for norm in tokens bytes; do
    run_split generate -m "$W/run" -t 1 --eval-choices "$W/known.tsv" --normalize $norm
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [[ "$output" == '{"items": 8, "correct": 8, "accuracy": 1.000000, "shots": 0, '*"\"normalize\": \"$norm\"}" ]]
  done
  run_split generate -m "$W/run" -t 1 --eval-choices "$W/known.tsv" --normalize none
  [[ "$output" == '{"items": 8, "correct": '[0-4]', "accuracy": 0.'*'"normalize": "none"}' ]]
  # -v: each item, then the summary; the choice is the best score, the score the mode's figure
  cat >"$T/check.py" <<'PY'
import json, sys
norm = sys.argv[1]
items = [json.loads(l) for l in sys.stdin]
summary = items.pop()
gold = [int(l.split("\t")[0]) for l in open(sys.argv[2])]
for n, d in enumerate(items):
    assert d["line"] == n + 1 and d["gold"] == gold[n] and d["shots"] == []
    k = len(d["score"])
    assert k == 4 and len(d["logprob"]) == len(d["tokens"]) == len(d["bytes"]) == 4
    for c in range(k):
        want = {"none": d["logprob"][c], "tokens": d["logprob"][c] / d["tokens"][c],
                "bytes": d["logprob"][c] / d["bytes"][c],
                "unconditional": d["logprob"][c] - d.get("unconditional", [0] * 4)[c]}[norm]
        assert abs(d["score"][c] - want) < 2e-6, (c, d)
    assert d["choice"] == max(range(k), key=lambda c: (d["score"][c], -c))
    assert d["correct"] == (d["choice"] == d["gold"])
    assert ("unconditional" in d) == (norm == "unconditional")
correct = sum(d["correct"] for d in items)
assert summary["items"] == 8 and summary["correct"] == correct
assert abs(summary["accuracy"] - correct / 8) < 1e-6 and summary["candidates"] == 4 and summary["normalize"] == norm
PY
  for norm in none tokens bytes unconditional; do
    run_split generate -m "$W/run" -t 1 --eval-choices "$W/known.tsv" --normalize $norm -v
    [ "$status" -eq 0 ]
    [ "$(wc -l <<<"$output")" -eq 9 ]
    /usr/bin/python3 "$T/check.py" "$norm" "$W/known.tsv" <<<"$output" || { echo "$output"; false; }
  done
}

@test "generate --eval-choices: each candidate's log-likelihood is --score's after the prompt" {
  # zero shots, a template without newlines: the prompt is 'context =>', a candidate ' choice'
  run_split generate -m "$W/run" -t 1 --eval-choices "$W/known.tsv" --template '{context} => {answer}\n' -v
  [ "$status" -eq 0 ]
  jfield logprob <<<"$output" | head -8 | tr -d '[],' | tr ' ' '\n' >"$T/icl.txt"
  cut -f2- "$W/known.tsv" | while IFS=$'\t' read -r ctx c0 c1 c2 c3; do
    for c in "$c0" "$c1" "$c2" "$c3"; do printf '%s =>\t %s\n' "$ctx" "$c"; done
  done >"$T/lines.txt"
  run_split generate -m "$W/run" -t 1 --score "$T/lines.txt"
  [ "$status" -eq 0 ]
  jfield logprob <<<"$output" >"$T/score.txt"
  [ "$(wc -l <"$T/score.txt")" -eq 32 ]
  paste "$T/icl.txt" "$T/score.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4) { print; bad++ } } END { exit bad }'
}

@test "generate --eval-choices: shots drawn by --seed, without repeats, never the item itself" {
  # the items are their own shots' file: each item's shots are other lines
  printf 'a\tone\nb\ttwo\na\tthree\nb\tfour\na\tfive\nb\tsix\n' >"$T/d.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/d.tsv" --shots-from "$T/d.tsv" --shots 5 --template '{context}={answer};' -v
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *lowered* ]]
  /usr/bin/python3 -c 'import json, sys
items = [json.loads(l) for l in sys.stdin][:-1]
assert len(items) == 6
for d in items:  # all five others, each once
    assert sorted(d["shots"]) == sorted(set(range(1, 7)) - {d["line"]}), d' <<<"$output"
  # the same seed, the same shots; another seed, others; --shots 2 takes the first 2 of 3
  printf 'a\tone\nb\ttwo\na\tthree\nb\tfour\na\tfive\nb\tsix\na\tseven\nb\teight\n' >"$T/train.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/d.tsv" --shots-from "$T/train.tsv" --shots 3 --seed 7 -v --template '{context}={answer};'
  s7="$(jfield shots <<<"$output" | head -6)"
  run_split generate -m "$W/run" -t 4 --eval-choices "$T/d.tsv" --shots-from "$T/train.tsv" --shots 3 --seed 7 -v --template '{context}={answer};'
  [ "$(jfield shots <<<"$output" | head -6)" = "$s7" ]
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/d.tsv" --shots-from "$T/train.tsv" --shots 3 --seed 8 -v --template '{context}={answer};'
  [ "$(jfield shots <<<"$output" | head -6)" != "$s7" ]
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/d.tsv" --shots-from "$T/train.tsv" --shots 2 --seed 7 -v --template '{context}={answer};'
  [ "$(jfield shots <<<"$output" | head -6)" = "$(sed 's/, [0-9]*\]$/]/' <<<"$s7")" ]
  # a duplicate of the item is not its shot either: with one other example, one shot is that one
  printf 'a\tone\na\tone\nb\ttwo\n' >"$T/dup.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/d.tsv" --shots-from "$T/dup.tsv" --shots 2 -v
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"d.tsv' line 1: '$T/dup.tsv' holds 1 examples other than this item, fewer than the 2 shots asked"* ]]
}

@test "generate --eval-choices: shots dropped whole where the context is short, with a warning; an item too long cut at its end" {
  cut -f1,2 "$W/known.tsv" | sed 's/^[0-9]/x/' >"$T/cls.tsv"
  sed 's/^[0-9]\t/y\t/' "$W/corpus.txt" | head -40 | awk -F'\t' 'NF == 2' >"$T/train.tsv"
  cat "$T/cls.tsv" >>"$T/train.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/cls.tsv" --shots-from "$T/train.tsv" --shots 4 -v
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"cls.tsv' line 1: --shots 4 lowered to "[0-3]": more shots and the item would pass the model's context of 64 tokens"* ]]
  [[ "$stderr" == *"--shots 4 lowered on "[1-8]" of 8 items"* ]]
  /usr/bin/python3 -c 'import json, sys
lines = [json.loads(l) for l in sys.stdin]
summary, items = lines[-1], lines[:-1]
low = [d for d in items if len(d["shots"]) < 4]
assert low and summary["lowered"] == len(low), summary
assert abs(summary["mean_shots"] - sum(len(d["shots"]) for d in items) / 8) < 1e-4
for d in items:
    assert d["prompt_tokens"] + max(d["tokens"]) <= 64, d' <<<"$output"
  # --max-length: shorter still; one shot is left for none
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/cls.tsv" --shots-from "$T/train.tsv" --shots 4 --max-length 24
  [ "$status" -eq 0 ]
  [[ "$output" == *'"mean_shots": 0.0000, "lowered": 8, "cut": '* ]]
  # an item longer than the context alone: its text loses its end, the template stays
  printf 'x\t%s\n' "$(head -6 "$W/corpus.txt" | tr '\n' ' ')" >"$T/long.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/long.tsv" --shots-from "$T/train.tsv" -v
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"long.tsv' line 1: the item's text loses its end ("*" tokens): with its longest candidate it passes the model's context of 64"* ]]
  [[ "${lines[1]}" == *'"cut": 1,'* ]]
  # cut in whole words: the prompt and its candidate fill the 64 positions but for less than a word
  /usr/bin/python3 -c 'import json, sys
d = json.loads(sys.stdin.readline())
assert 56 <= d["prompt_tokens"] + max(d["tokens"]) <= 64, d' <<<"$output"
}

@test "generate --eval-choices: classification candidates are the shots' labels, as words; pairs" {
  printf 'Fehler\tFehler beim Importieren\nSitzung\tDie Sitzung ist geschlossen\nFehler\tKritischer Fehler\n' >"$T/train.tsv"
  printf 'Sitzung\tDie Sitzung ist eröffnet\nFehler\tEin Fehler\n' >"$T/dev.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/dev.tsv" --shots-from "$T/train.tsv" --shots 1 -v \
    --template '{context} = {answer}\n'
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" != *lowered* ]]
  [[ "${lines[0]}" == '{"line": 1, "gold": "Sitzung", "choice": "'*'", "correct": '*', "shots": ['[123]'], '* ]]
  [[ "$output" == *'"candidates": 2, "normalize": "tokens"}' ]]
  # the words of labels: the candidates are ' Error' and ' Meeting' (the bytes tell)
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/dev.tsv" --shots-from "$T/train.tsv" --label-words 'Fehler=Error,Sitzung=Meeting' -v
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *'"bytes": [6, 8], '* ]]
  [[ "${lines[0]}" == '{"line": 1, "gold": "Sitzung", '* ]]
  # zero shots and no shots' file: the evaluated file's labels
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/dev.tsv"
  [ "$status" -eq 0 ]
  [[ "$output" == '{"items": 2, '*'"candidates": 2, '* ]]
  # pairs: label<TAB>a<TAB>b
  printf '1\tFehler beim Importieren\tDer Kalender\n0\tDie Sitzung\tKile\n' >"$T/pair.tsv"
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/pair.tsv" --shots-from "$T/pair.tsv" --shots 1 --label-words 0=nein,1=ja
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == '{"items": 2, '*'"candidates": 2, '* ]]
  run_split generate -m "$W/run" -t 1 --eval-choices "$T/pair.tsv" --template 'A: {a} B: {b} = {answer}'
  [ "$status" -eq 0 ]
}

@test "generate --eval-choices: bad data and misuse name the file, the line or the option" {
  printf '0\tc\ta\tb\tc\td\n1\tc\ta\tb\tc\n' >"$T/counts.tsv"
  printf '4\tc\ta\tb\tc\td\n' >"$T/range.tsv"
  printf '1\tc\ta\tb\tc\td\n' >"$T/ok.tsv"
  printf 'x\tsome text\n' >"$T/cls.tsv"
  printf 'y\tother text\n' >"$T/cls2.tsv"
  : >"$T/empty.tsv"
  while IFS='|' read -r args code want; do
    eval "set -- $args"
    run_split generate -m "$W/run" -t 1 "$@"
    [ "$status" -eq "$code" ] || { echo "$args: status $status, $stderr"; false; }
    [[ "$stderr" == *"$want"* ]] || { echo "$args: $stderr"; false; }
  done <<EOF
--eval-choices $T/counts.tsv|1|'$T/counts.tsv' line 2 has 3 choices where line 1 has 4
--eval-choices $T/range.tsv|1|'$T/range.tsv' line 1: label '4' is not the index of a choice (0 to 3, the first choice being 0)
--eval-choices $T/ok.tsv --shots-from $T/counts.tsv|1|counts.tsv' line 2 has 3 choices
--eval-choices $T/ok.tsv --shots-from $T/empty.tsv --shots 2|1|'$T/empty.tsv' holds no examples: no shots to draw (--shots 2)
--eval-choices $T/empty.tsv|1|'$T/empty.tsv' holds no examples: nothing to evaluate
--eval-choices $T/cls.tsv --shots-from $T/cls2.tsv|1|'$T/cls.tsv' line 1: label 'x' is not among the 1 labels of '$T/cls2.tsv'
--eval-choices $T/cls.tsv --shots-from $T/ok.tsv|1|'$T/cls.tsv' line 1 has 2 fields (classify data) where '$T/ok.tsv' has 6 (choice data)
--eval-choices $T/nonexistent.tsv|1|nonexistent.tsv
--eval-choices $T/ok.tsv --template 'Q: {context} A:'|2|--template 'Q: {context} A:': no {answer}
--eval-choices $T/ok.tsv --template 'A: {answer}'|2|--template 'A: {answer}': no {context}
--eval-choices $T/ok.tsv --template '{text} {answer}'|2|{text} is not a placeholder of choice data: {context} and {answer} are
--eval-choices $T/cls.tsv --template '{context} {answer} {context}'|2|{context} after {answer}
--eval-choices $T/ok.tsv --template '{context}\\x{answer}'|2|'\\x' is not an escape
--eval-choices $T/ok.tsv --normalize words|2|--normalize
--eval-choices $T/ok.tsv --shots 2|2|--shots 2: the shots are drawn from --shots-from TRAIN; give it
--eval-choices $T/ok.tsv --label-words 0=no|2|--label-words names labels of classification data
--eval-choices $T/cls.tsv --label-words z=no|2|--label-words: 'z=no': no label 'z' in the data
--eval-choices $T/cls.tsv --label-words x|2|not LABEL=WORD
--eval-choices $T/ok.tsv -p hello|2|--eval-choices reads its FILE
--eval-choices $T/ok.tsv $T/cls.tsv|2|--eval-choices reads its FILE
--eval-choices $T/ok.tsv --score|2|exclude each other
--eval-choices $T/ok.tsv --template '{context}{answer}' --normalize unconditional --input-format text|0|
--shots 2|2|--shots is for --eval-choices FILE
--template x|2|--template is for --eval-choices FILE
--normalize bytes|2|--normalize is for --eval-choices FILE
EOF
}
