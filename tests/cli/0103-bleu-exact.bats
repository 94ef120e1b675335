#!/usr/bin/env bats
# bleu -m exact (issue 28, classification as text): the percentage of
# hypothesis lines equal to their reference line, on hand cases — several
# references, --lowercase, white space, empty lines — in text, JSON and
# sentence-level output, beside the other metrics and in multi-system
# tables; the documented pipeline from a labelled TSV; misuse.

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  # hypotheses: a match, a miss (neg for pos), an empty line matching an
  # empty one, a match but for case and trailing space, a match
  printf 'pos\nneg\n\nPos \nneutral\n' >hyp.txt
  printf 'pos\npos\n\npos\nneutral\n' >ref1.txt
  printf 'neg\nneg\n\nneg\nx\n' >ref2.txt
}

SIG='nrefs:1|case:mixed|version:2.5.1+nlpipe'

@test "bleu -m exact: the share of lines matched, in text and JSON, with the counts" {
  run_split bleu -m exact -f text ref1.txt -i hyp.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$output" = "Exact|$SIG = 60.0 (correct = 3 lines = 5)" ]
  # standard input, and the JSON shape of the other metrics with the counts as numbers
  run_split bleu -m exact ref1.txt <hyp.txt
  [ "$status" -eq 0 ]
  [ "$(jq -c . <<<"$output")" = '{"name":"Exact","score":60,"signature":"'"$SIG"'","verbose_score":"(correct = 3 lines = 5)","correct":3,"lines":5,"nrefs":"1","case":"mixed","version":"2.5.1+nlpipe"}' ]
  [ "$(bleu -m exact -b -w 3 ref1.txt <hyp.txt)" = "60.000" ]
  # --lowercase: Pos matches pos
  [ "$(bleu -m exact -lc -f text ref1.txt <hyp.txt)" = "Exact|nrefs:1|case:lc|version:2.5.1+nlpipe = 80.0 (correct = 4 lines = 5)" ]
  # several references: a match to any counts (neg matches the second)
  [ "$(bleu -m exact -f text ref1.txt ref2.txt <hyp.txt)" = "Exact|nrefs:2|case:mixed|version:2.5.1+nlpipe = 80.0 (correct = 4 lines = 5)" ]
  [ "$(bleu -m exact -lc -b ref1.txt ref2.txt <hyp.txt)" = "100.0" ]
  # the same line once per system: the hypotheses as references score 100
  [ "$(bleu -m exact -b hyp.txt <hyp.txt)" = "100.0" ]
  # white space around a label does not count, inside it does; all-empty files match
  printf '  pos\t\npo s\n' >h2.txt
  printf 'pos\npos\n' >r2.txt
  [ "$(bleu -m exact -b r2.txt -i h2.txt)" = "50.0" ]
  printf '\n\n' >e.txt
  [ "$(bleu -m exact -b e.txt -i e.txt)" = "100.0" ]
  [ "$(bleu -m exact -b r2.txt -i e.txt)" = "0.0" ]
}

@test "bleu -m exact --sentence-level: 100 or 0 a line; with other metrics and several systems" {
  run_split bleu -m exact --sentence-level -b ref1.txt -i hyp.txt
  [ "$status" -eq 0 ]
  [ "$output" = $'100.0\n0.0\n100.0\n0.0\n100.0' ]
  run_split bleu -m exact --sentence-level ref1.txt -i hyp.txt
  [ "$(sed -n 2p <<<"$output")" = "Exact|$SIG = 0.0 (correct = 0 lines = 1)" ]
  # the mean of the lines' scores is the corpus score
  [ "$(bleu -m exact --sentence-level -b ref1.txt <hyp.txt | awk '{ s += $1 } END { printf "%.1f", s / NR }')" = \
    "$(bleu -m exact -b ref1.txt <hyp.txt)" ]
  # beside BLEU and chrF, after them
  run_split bleu -m bleu exact chrf -f text ref1.txt -i hyp.txt
  [ "$status" -eq 0 ]
  [ "$(wc -l <<<"$output")" -eq 3 ]
  [[ "$(sed -n 3p <<<"$output")" == *"Exact|$SIG = 60.0 (correct = 3 lines = 5)" ]]
  # two systems: a table with an Exact column
  run_split bleu -m exact ref1.txt -i hyp.txt ref2.txt
  [ "$status" -eq 0 ]
  [ "$(jq -c '[.[] | .Exact]' <<<"$output")" = '["60.0","20.0"]' ]
  # a paired test runs on its statistics
  run_split bleu -m exact --paired-bs --paired-bs-n 100 -f text --no-color ref1.txt -i hyp.txt ref2.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$output" == *"Baseline: hyp.txt │  60.0"* ]]
  [[ "$output" == *"ref2.txt │  20.0"* ]]
}

@test "bleu -m exact: the pipeline from a labelled TSV; its accuracy is the share of equal lines" {
  # labelled data and a "model" that gets some labels wrong
  printf 'section: a cat\tanimals\nsection: a stock\tfinance\nsection: a goal\tsport\nsection: a dog\tanimals\n' >dev.tsv
  printf 'animals\nsport\nsport\nanimals\n' >pred.txt
  run_split bash -c 'bleu -m exact -b <(cut -f2 dev.tsv) <pred.txt'
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$output" = "75.0" ]
  # the same by hand: lines equal / lines
  [ "$(paste pred.txt <(cut -f2 dev.tsv) | awk -F'\t' '{ n++; c += $1 == $2 } END { printf "%.1f", 100 * c / n }')" = "$output" ]
}

@test "bleu -m exact: misuse and inconsistent input are clear errors" {
  # line counts that differ: exit 1 naming both files
  printf 'pos\n' >one.txt
  run_split bleu -m exact ref1.txt -i one.txt
  [ "$status" -eq 1 ]
  [ "$stderr" = "bleu: 'one.txt' has 1 lines but 'ref1.txt' has 5" ]
  run_split bleu -m exact ref1.txt one.txt -i hyp.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'hyp.txt' has 5 lines but 'one.txt' has 1"* ]]
  run_split bash -c 'printf "pos\n" | bleu -m exact ref1.txt'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"'<stdin>' has 1 lines but 'ref1.txt' has 5"* ]]
  # usage errors (2)
  run_split bleu -m exactly ref1.txt -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'exactly' is not one of bleu, chrf, ter or exact"* ]]
  run_split bleu -m exact,bleu --sentence-level ref1.txt -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--sentence-level takes exactly one metric"* ]]
  run_split bleu -m exact -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"no reference file given"* ]]
  run_split bleu -m exact missing.txt -i hyp.txt
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"missing.txt"* ]]
}
