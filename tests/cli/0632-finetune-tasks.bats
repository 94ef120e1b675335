#!/usr/bin/env bats
# finetune's other tasks (issue 30): multiple choice (GPT and BERT),
# GPT's similarity (both orders of a pair), and extractive question
# answering (BERT's span head): training, resume, predict, eval and bad
# input. Tiny models on the bundled demo sentences: a run takes a second or
# two.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >"$W/docs.txt"
  "$NLPIPE_BIN/train-wordpiece" --vocab-size 600 -o "$W/wp.json" "$D/src.en" "$D/tgt.de" 2>/dev/null
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 500 -o "$W/bpe.json" "$D/src.en" "$D/tgt.de" 2>/dev/null
  TINY=(--preset tiny -t 1 -q)
  "$NLPIPE_BIN/pretrain" --arch bert "${TINY[@]}" --tokenizer "$W/wp.json" --steps 40 -B 8 --max-length 48 \
    --lr 1e-3 --warmup 5 -m "$W/bert" "$W/docs.txt"
  "$NLPIPE_BIN/pretrain" "${TINY[@]}" --tokenizer "$W/bpe.json" --steps 40 -B 4 --max-length 32 --lr 3e-3 \
    --warmup 5 -m "$W/gpt" "$D/src.en"
  # a trivially learnable multiple choice: of an English sentence's four
  # candidates, the right one is its German translation, the others English
  python3 - "$D" "$W" <<'PY'
import random, sys
d, w = sys.argv[1], sys.argv[2]
r = random.Random(1)
en = [l.rstrip('\n') for l in open(d + '/src.en', encoding='utf-8')]
de = [l.rstrip('\n') for l in open(d + '/tgt.de', encoding='utf-8')]
rows = []
for i, s in enumerate(en):
    wrong = r.sample([x for j, x in enumerate(en) if j != i], 3)
    k = r.randrange(4)
    rows.append('\t'.join([str(k), s] + wrong[:k] + [de[i]] + wrong[k:]))
open(w + '/choice.tsv', 'w', encoding='utf-8').write('\n'.join(rows[:160]) + '\n')
open(w + '/choice-dev.tsv', 'w', encoding='utf-8').write('\n'.join(rows[160:]) + '\n')
PY
  # extractive QA over German sentences (accents, capitals): "first word"
  # and "last word", their answers a word of the sentence
  python3 - "$D" "$W" <<'PY'
import json, re, sys
d, w = sys.argv[1], sys.argv[2]
de = [l.rstrip('\n') for l in open(d + '/tgt.de', encoding='utf-8')]
paras = []
for i, s in enumerate(de):
    words = list(re.finditer(r"\w+", s))
    qas = [{"id": "%s%d" % (k[0], i), "question": k + " word", "answers": [{"text": m.group(), "answer_start": m.start()}]}
           for k, m in (("first", words[0]), ("last", words[-1]))]
    paras.append({"context": s, "qas": qas})
for name, part in (("qa.json", paras[:160]), ("qa-dev.json", paras[160:])):
    json.dump({"version": "1.1", "data": [{"title": "de", "paragraphs": part}]}, open(w + "/" + name, "w", encoding="utf-8"),
              ensure_ascii=False)
PY
  # pairs: the same language (1) or not (0)
  paste -d'\t' <(sed 's/.*/1/' "$D/src.en") "$D/src.en" <(tail -n +2 "$D/src.en"; head -1 "$D/src.en") >"$W/pair.tsv"
  paste -d'\t' <(sed 's/.*/0/' "$D/src.en") "$D/src.en" "$D/tgt.de" >>"$W/pair.tsv"
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  FT=(-t 1 -q -B 8 --max-length 48 --lr 2e-3 --warmup 4)
}

# the loss columns of a log (step, tokens, lr, loss, grad_norm, valid_*), without times and speeds
losses() { cut -f1,2,4,5,6,8- "$1"; }

with_sigint() {
  exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

@test "finetune choice: GPT and BERT learn a trivial choice set, chosen from the data; eval and predict" {
  run_split finetune --init "$W/gpt" --valid "$W/choice-dev.tsv" --epochs 3 "${FT[@]/-q/-v}" --no-progress -m "$T/g" \
    --log "$T/g.tsv" "$W/choice.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"choice.tsv': task choice (its lines' fields"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"gpt multiple choice: "*"160 training examples of 4 choices"* ]]
  head -1 "$T/g.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_accuracy'
  grep -qx 'task: choice' "$T/g/latest/run.yaml"
  grep -aq '"task":"choice"' "$T/g/best/model.safetensors"
  grep -aq '"input_texts":"5"' "$T/g/best/model.safetensors"
  # well above chance (0.25) on the held-out examples; eval says what validation said
  best=$(awk -F'\t' 'NR > 1 && $9 != "" && $9 > a { a = $9 } END { print a }' "$T/g.tsv")
  awk -v a="$best" 'BEGIN { exit !(a >= 0.75) }' || { cat "$T/g.tsv"; false; }
  run_split finetune eval -m "$T/g" -q "$W/choice-dev.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"choice-dev.tsv: 40 examples of 4 choices, accuracy ${best:0:6}"* ]] || { echo "$output / $best"; false; }
  run_split finetune eval --json -m "$T/g" -q "$W/choice-dev.tsv"
  python3 -c 'import json, sys; j = json.loads(sys.stdin.read()); assert j["examples"] == 40 and j["choices"] == 4 and 0 <= j["accuracy"] <= 1' <<<"$output"
  # predict: the chosen index and its probability, every choice's with --all
  run_split bash -c "cut -f2- '$W/choice-dev.tsv' | finetune predict -q -m '$T/g'"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(echo "$output" | wc -l)" -eq 40 ]
  echo "$output" | awk -F'\t' 'NF != 2 || $1 !~ /^[0-3]$/ || $2 < 0.25 || $2 > 1 { exit 1 }'
  # the predictions are the eval's: as many right as its accuracy says
  right=$(paste <(cut -f1 "$W/choice-dev.tsv") <(echo "$output") | awk -F'\t' '$1 == $2' | wc -l)
  awk -v r="$right" -v a="$best" 'BEGIN { d = r / 40 - a; exit !(d < 1e-6 && d > -1e-6) }' || { echo "$right right, accuracy $best"; false; }
  run_split bash -c "head -1 '$W/choice-dev.tsv' | cut -f2- | finetune predict --all -q -m '$T/g'"
  echo "$output" | awk -F'\t' '{ s = 0; for (i = 3; i <= 6; i++) { split($i, p, ":"); if (p[1] != i - 3) exit 1; s += p[2] } exit !(NF == 6 && s > 0.9999 && s < 1.0001) }'
  # BERT: [CLS] context [SEP] choice [SEP], the pooled [CLS] scored
  run_split finetune --init "$W/bert" --task choice --valid "$W/choice-dev.tsv" --epochs 3 "${FT[@]}" -m "$T/b" \
    --log "$T/b.tsv" "$W/choice.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  awk -F'\t' 'NR > 1 && $9 != "" && $9 > a { a = $9 } END { exit !(a >= 0.75) }' "$T/b.tsv" || { cat "$T/b.tsv"; false; }
}

@test "finetune choice: bad input names the file and line; the model reads its own number of choices" {
  printf '1\tctx\ta\tb\tc\td\n2\tctx\ta\tb\tc\n' >"$T/k.tsv"
  run_split finetune --init "$W/gpt" "${FT[@]}" -m "$T/x" "$T/k.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'$T/k.tsv' line 2 has 3 choices but line 1 has 4"* ]] || { echo "$stderr"; false; }
  printf '1\tctx\ta\tb\tc\td\n4\tctx\ta\tb\tc\td\n' >"$T/l.tsv"
  run_split finetune --init "$W/gpt" "${FT[@]}" -m "$T/x" "$T/l.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"l.tsv' line 2: label '4' is not the index of a choice (0 to 3)"* ]] || { echo "$stderr"; false; }
  printf '1\tctx\ta\tb\t\td\n' >"$T/e.tsv"
  run_split finetune --init "$W/gpt" "${FT[@]}" -m "$T/x" "$T/e.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"e.tsv' line 1: empty choice 2"* ]]
  # validation with other choices than training
  cut -f1-4 "$W/choice-dev.tsv" | sed 's/^3/0/' >"$T/dev3.tsv"
  run_split finetune --init "$W/gpt" "${FT[@]}" --valid "$T/dev3.tsv" -m "$T/x" "$W/choice.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"dev3.tsv' line 1 has 2 choices where 4 are expected"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/x" ]
  run_split finetune --init "$W/gpt" --task choice --labels /dev/null "${FT[@]}" -m "$T/x" "$W/choice.tsv"
  [ "$status" -eq 2 ]
  # a trained model: a labelled file given to predict, three choices to a model of four
  run_split finetune --init "$W/gpt" --epochs 1 "${FT[@]}" -m "$T/m" "$W/choice.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split finetune predict -q -m "$T/m" "$W/choice-dev.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"choice-dev.tsv' line 1 has 6 fields, but '$T/m' was fine-tuned on 4 choices"*"is it a labelled file?"* ]] || { echo "$stderr"; false; }
  run_split finetune eval -q -m "$T/m" "$T/dev3.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"dev3.tsv' line 1 has 4 fields, but '$T/m' was fine-tuned on 4 choices"* ]] || { echo "$stderr"; false; }
  # a multiple-choice model is no model to fine-tune again, and --task may not change on resume
  run_split finetune --init "$T/m" "${FT[@]}" -m "$T/y" "$W/choice.tsv"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"is a multiple-choice model already"* ]] || { echo "$stderr"; false; }
  run_split finetune --resume "$T/m" --task classify -q
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--task classify: the run in"*"is of task choice"* ]] || { echo "$stderr"; false; }
}

@test "finetune choice: a run stopped by SIGINT resumes to the same losses and weights" {
  args=(--init "$W/gpt" --epochs 3 "${FT[@]}" --dropout 0.1 --lm-weight 0.5 "$W/choice.tsv")
  run_split finetune "${args[@]}" -m "$T/a" --log "$T/a.tsv" --keep 0
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  (with_sigint "$NLPIPE_BIN/finetune" "${args[@]}" -m "$T/b" --log "$T/b.tsv" --keep 0 2>/dev/null &
    p=$!; while [ ! -d "$T/b/step-00000020" ]; do sleep 0.05; done; kill -INT "$p"; rc=0; wait "$p" || rc=$?; echo "rc=$rc" >"$T/rc")
  grep -qE 'rc=(0|130)' "$T/rc"
  run_split finetune --resume "$T/b" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv" | awk '!seen[$1]++')" ]
  cmp "$T/a/step-00000060/model.safetensors" "$T/b/step-00000060/model.safetensors"
}

@test "finetune similarity: GPT reads a pair in both orders; a and b swapped give the same bytes" {
  run_split finetune --init "$W/gpt" --task similarity --epochs 2 "${FT[@]}" -m "$T/s" --log "$T/s.tsv" "$W/pair.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -qx 'task: similarity' "$T/s/latest/run.yaml"
  head -40 "$W/pair.tsv" | cut -f2,3 >"$T/ab.txt"
  awk -F'\t' '{ print $2 "\t" $1 }' "$T/ab.txt" >"$T/ba.txt"
  run_split finetune predict --all -q -m "$T/s" "$T/ab.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  ab="$output"
  [ "$(echo "$ab" | wc -l)" -eq 40 ]
  # the probabilities differ from line to line: the comparison compares something
  [ "$(echo "$ab" | cut -f2 | sort -u | wc -l)" -gt 5 ]
  run_split finetune predict --all -q -m "$T/s" "$T/ba.txt"
  [ "$output" = "$ab" ]
  # a plain GPT classifier of the same pairs is not symmetric
  run_split finetune --init "$W/gpt" --epochs 2 "${FT[@]}" -m "$T/c" "$W/pair.tsv"
  [ "$status" -eq 0 ]
  [ "$(finetune predict --all -q -m "$T/c" "$T/ab.txt")" != "$(finetune predict --all -q -m "$T/c" "$T/ba.txt")" ]
  # single texts, and BERT, are no similarity task
  cut -f1,2 "$W/pair.tsv" >"$T/single.tsv"
  run_split finetune --init "$W/gpt" --task similarity "${FT[@]}" -m "$T/x" "$T/single.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"single.tsv' line 1: 2 fields where 3 are expected (label<TAB>text_a<TAB>text_b)"* ]] || { echo "$stderr"; false; }
  run_split finetune --init "$W/bert" --task similarity "${FT[@]}" -m "$T/x" "$W/pair.tsv"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--task similarity is GPT's"* ]]
}

@test "finetune span: BERT learns extractive QA from SQuAD JSON; predict writes the passages' own text, eval SQuAD's figures" {
  QA=(-t 1 -q -B 16 --max-length 48 --doc-stride 16 --lr 2e-3 --warmup 4)
  run_split finetune --init "$W/bert" --valid "$W/qa-dev.json" --epochs 4 "${QA[@]/-q/-v}" --no-progress -m "$T/q" \
    --log "$T/q.tsv" "$W/qa.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"qa.json': task span (it is JSON"* ]] || { echo "$stderr"; false; }
  [[ "$stderr" == *"bert question answering: "*"320 training questions in "*" windows of 48 positions"* ]] || { echo "$stderr"; false; }
  head -1 "$T/q.tsv" | grep -qx $'step\ttokens\tminutes\tlr\tloss\tgrad_norm\ttokens_per_s\tvalid_loss\tvalid_exact_match\tvalid_f1'
  grep -qx 'task: span' "$T/q/latest/run.yaml"
  grep -qx 'doc-stride: 16' "$T/q/latest/run.yaml"
  grep -aq '"task":"span"' "$T/q/best/model.safetensors"
  grep -aq 'qa_outputs.weight' "$T/q/best/model.safetensors"
  # validation F1 (percent) rises over the epochs: the head learns something
  awk -F'\t' 'NR > 1 && $10 != "" { f[++n] = $10 } END { exit !(n == 4 && f[4] > f[1] && f[4] >= 20 && f[4] <= 100) }' "$T/q.tsv" || { cat "$T/q.tsv"; false; }
  # predict: one JSON object, every question's answer a substring of its own passage
  run_split finetune predict -q -m "$T/q" --doc-stride 16 "$W/qa-dev.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  echo "$output" >"$T/pred.json"
  python3 - "$W/qa-dev.json" "$T/pred.json" <<'PY'
import json, sys
data, pred = json.load(open(sys.argv[1], encoding="utf-8")), json.load(open(sys.argv[2], encoding="utf-8"))
n = 0
for a in data["data"]:
    for p in a["paragraphs"]:
        for q in p["qas"]:
            n += 1
            assert q["id"] in pred, q["id"]
            assert pred[q["id"]] and pred[q["id"]] in p["context"], (pred[q["id"]], p["context"])
assert len(pred) == n == 80
PY
  # eval: the best validation's figures (percent), text and JSON
  best=$(awk -F'\t' 'NR > 1 && $10 != "" && $10 > b { b = $10; e = $9 } END { printf "%.2f %.2f", e, b }' "$T/q.tsv")
  run_split finetune eval -q -m "$T/q" --doc-stride 16 "$W/qa-dev.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"qa-dev.json: 80 questions ("*" windows), exact match ${best% *}, F1 ${best#* }, loss "* ]] || { echo "$output / $best"; false; }
  # without the flags, the training run's settings (its run.yaml): the same windows and figures
  given="$output"
  run_split finetune eval -q -m "$T/q" "$W/qa-dev.json"
  [ "$status" -eq 0 ] && [ "$output" = "$given" ] || { echo "$output / $given"; false; }
  run_split finetune eval -q -m "$T/q/best" --doc-stride 64 "$W/qa-dev.json"
  [ "$status" -eq 0 ] && [ "${output%% windows*}" != "${given%% windows*}" ] || { echo "$output / $given"; false; }
  # question<TAB>passage lines, ids by line
  run_split bash -c "printf 'first word\tGröße des Fensters ändern\nlast word\tDateien öffnen\n' | finetune predict -q -m '$T/q'"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  python3 -c 'import json, sys; p = json.loads(sys.stdin.read()); assert list(p) == ["1", "2"]; assert p["1"] in "Größe des Fensters ändern" and p["2"] in "Dateien öffnen"' <<<"$output"
}

@test "finetune span: eval's exact match and F1 are squad_eval.py's on the same predictions" {
  need_shared
  [ -f "$SHARED/data/qa/squad_eval.py" ] || skip "no squad_eval.py in $SHARED/data/qa"
  run_split finetune --init "$W/bert" --epochs 2 -t 1 -q -B 16 --max-length 48 --doc-stride 16 --lr 2e-3 --warmup 4 \
    -m "$T/q" "$W/qa.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  finetune predict -q -m "$T/q" --doc-stride 16 "$W/qa-dev.json" >"$T/pred.json"
  run_split finetune eval --json -q -m "$T/q" --doc-stride 16 "$W/qa-dev.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  ref="$(python3 "$SHARED/data/qa/squad_eval.py" "$W/qa-dev.json" "$T/pred.json")"
  python3 -c 'import json, sys; a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2]); assert abs(a["exact_match"] - b["exact_match"]) < 1e-9 and abs(a["f1"] - b["f1"]) < 1e-9, (a, b)' "$output" "$ref"
}

@test "finetune span: a run stopped by SIGINT resumes to the same losses and weights" {
  args=(--init "$W/bert" --epochs 2 -t 1 -q -B 16 --max-length 48 --doc-stride 16 --lr 2e-3 --warmup 4 --dropout 0.1
    --save-every 10 "$W/qa.json")
  run_split finetune "${args[@]}" -m "$T/a" --log "$T/a.tsv" --keep 0
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  last=$(ls -d "$T"/a/step-* | tail -1)
  (with_sigint "$NLPIPE_BIN/finetune" "${args[@]}" -m "$T/b" --log "$T/b.tsv" --keep 0 2>/dev/null &
    p=$!; while [ ! -d "$T/b/step-00000020" ]; do sleep 0.05; done; kill -INT "$p"; rc=0; wait "$p" || rc=$?; echo "rc=$rc" >"$T/rc")
  grep -qE 'rc=(0|130)' "$T/rc"
  run_split finetune --resume "$T/b" -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(losses "$T/a.tsv")" = "$(losses "$T/b.tsv" | awk '!seen[$1]++')" ]
  cmp "$last/model.safetensors" "$T/b/${last##*/}/model.safetensors"
}

@test "finetune span: bad input names the file and the question; misuse is a usage error" {
  # an answer_start that does not point at its text
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
d["data"][0]["paragraphs"][3]["qas"][1]["answers"][0]["answer_start"] += 1
json.dump(d, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)' "$W/qa.json" "$T/bad.json"
  run_split finetune --init "$W/bert" -t 1 -q --max-length 48 -m "$T/x" "$T/bad.json"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bad.json': question 'l3' (data[0].paragraphs[3].qas[1]) answer 1: '"*"' is not the context's text at character"* ]] || { echo "$stderr"; false; }
  printf '{"data": [' >"$T/trunc.json"
  run_split finetune --init "$W/bert" -t 1 -q --max-length 48 -m "$T/x" "$T/trunc.json"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"trunc.json' line 1 column"* ]] || { echo "$stderr"; false; }
  # lines of question<TAB>passage have no answers to train on
  printf 'first word\tHallo Welt\n' >"$T/q.tsv"
  run_split finetune --init "$W/bert" --task span -t 1 -q --max-length 48 -m "$T/x" "$T/q.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"q.tsv' is not SQuAD JSON"* ]] || { echo "$stderr"; false; }
  [ ! -e "$T/x" ]
  # span is BERT's; its options are span's
  run_split finetune --init "$W/gpt" -t 1 -q --max-length 32 -m "$T/x" "$W/qa.json"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--task span is BERT's"* ]]
  run_split finetune --init "$W/bert" --doc-stride 8 -t 1 -q -m "$T/x" "$W/pair.tsv"
  [ "$status" -eq 2 ]
  run_split finetune --init "$W/bert" --epochs 1 -t 1 -q -B 16 --max-length 48 -m "$T/q" "$W/qa.json"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split finetune predict --all -q -m "$T/q" "$W/qa-dev.json"
  [ "$status" -eq 2 ]
  run_split finetune eval -q -m "$T/q" "$T/q.tsv"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"q.tsv' is not SQuAD JSON"* ]] || { echo "$stderr"; false; }
}
