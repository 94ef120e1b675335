#!/usr/bin/env bats
# bleu: every option, on small files written here (exact numbers are checked
# against sacreBLEU's vectors in tests/golden/bleu-vectors.sh).

load helper

setup() {
  cd "$BATS_TEST_TMPDIR"
  printf 'The cat sat on the mat.\nHello, World!\nA B C D E F\n' >ref.txt
  printf 'The cat is on the mat.\nhello world\nA B C D E G\n' >hyp.txt
  printf 'There is a cat on the mat.\nHello World!\nA B C D E F\n' >ref2.txt
}

@test "bleu: default output is sacreBLEU's JSON with our version field" {
  run_split bleu ref.txt -i hyp.txt
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "{" ]]
  [[ "${lines[1]}" == ' "name": "BLEU",' ]]
  [[ "$output" == *'"signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.5.1+nlpipe"'* ]]
  [[ "$output" == *'"version": "2.5.1+nlpipe"'* ]]
  [ -z "$stderr" ]
}

@test "bleu: -f text prints the score line; -b only the score; -w the decimals" {
  run bleu ref.txt -i hyp.txt -f text
  [[ "$output" =~ ^BLEU\|nrefs:1\|case:mixed\|eff:no\|tok:13a\|smooth:exp\|version:2\.5\.1\+nlpipe\ =\ [0-9]+\.[0-9]\ .*\(BP\ =\ [0-9.]+\ ratio\ = ]]
  run bleu ref.txt -i hyp.txt -b
  [[ "$output" =~ ^[0-9]+\.[0-9]$ ]]
  run bleu ref.txt -i hyp.txt --score-only --width 4
  [[ "$output" =~ ^[0-9]+\.[0-9]{4}$ ]]
  run bleu ref.txt -i hyp.txt -b -w 0
  [[ "$output" =~ ^[0-9]+$ ]]
}

@test "bleu: hypotheses on standard input, a lone CR ends a line there" {
  a="$(bleu ref.txt -i hyp.txt -b -w 6)"
  run bleu ref.txt -b -w 6 <hyp.txt
  [ "$output" = "$a" ]
  run bash -c "tr '\n' '\r' <hyp.txt | bleu ref.txt -b -w 6"
  [ "$output" = "$a" ]
}

@test "bleu: --tokenize (and -t, -tok) changes the tokenizer and the signature" {
  for t in 13a intl zh char none; do
    run bleu ref.txt -i hyp.txt -f text --tokenize $t
    [ "$status" -eq 0 ]
    [[ "$output" == *"|tok:$t|"* ]]
  done
  [ "$(bleu ref.txt -i hyp.txt -b -w 6 --tokenize char)" = "$(bleu ref.txt -i hyp.txt -b -w 6 -tok char)" ]
  [ "$(bleu ref.txt -i hyp.txt -b -w 6 -tok none)" != "$(bleu ref.txt -i hyp.txt -b -w 6 -tok 13a)" ]
}

@test "bleu: --lowercase / -lc: case:lc and a higher score on case differences" {
  run bleu ref.txt -i hyp.txt -f text --lowercase
  [[ "$output" == *"|case:lc|"* ]]
  mixed="$(bleu ref.txt -i hyp.txt -b -w 6)"; lc="$(bleu ref.txt -i hyp.txt -b -w 6 -lc)"
  awk -v a="$mixed" -v b="$lc" 'BEGIN { exit !(b > a) }'
}

@test "bleu: --smooth-method and --smooth-value (-s, -sv) show in the signature" {
  run bleu ref.txt -i hyp.txt -f text -s floor
  [[ "$output" == *"|smooth:floor[0.10]|"* ]]
  run bleu ref.txt -i hyp.txt -f text --smooth-method floor --smooth-value 0.01
  [[ "$output" == *"|smooth:floor[0.01]|"* ]]
  run bleu ref.txt -i hyp.txt -f text -s add-k -sv 2
  [[ "$output" == *"|smooth:add-k[2.00]|"* ]]
  run bleu ref.txt -i hyp.txt -f text -s none
  [[ "$output" == *"|smooth:none|"* ]]
}

@test "bleu: --max-ngram-order and --effective-order (sacreBLEU's API options)" {
  run bleu ref.txt -i hyp.txt -f text --max-ngram-order 2
  [[ "$output" =~ \ =\ [0-9.]+\ [0-9.]+/[0-9.]+\ \(BP ]]
  run bleu ref.txt -i hyp.txt -f text --effective-order
  [[ "$output" == *"|eff:yes|"* ]]
}

@test "bleu: --metrics as words or a comma list, printed BLEU, chrF, TER" {
  run bleu ref.txt -i hyp.txt -f text -m ter bleu chrf
  [ "${#lines[@]}" -eq 3 ]
  [[ "${lines[0]}" == *BLEU\|* ]]
  [[ "${lines[1]}" == *chrF2\|* ]]
  [[ "${lines[2]}" == TER\|* ]]
  run bleu ref.txt -i hyp.txt -f text --metrics=chrf,ter
  [ "${#lines[@]}" -eq 2 ]
  run bleu ref.txt -i hyp.txt -m bleu chrf
  [ "${lines[0]}" = "[" ]
}

@test "bleu: chrF options" {
  run bleu ref.txt -i hyp.txt -f text -m chrf
  [[ "$output" == "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.5.1+nlpipe = "* ]]
  run bleu ref.txt -i hyp.txt -f text -m chrf --chrf-word-order 2 --chrf-beta 3 --chrf-char-order 4
  [[ "$output" == "chrF3++|nrefs:1|case:mixed|eff:yes|nc:4|nw:2|"* ]]
  run bleu ref.txt -i hyp.txt -f text -m chrf -cw 2 -cc 5
  [[ "$output" == "chrF2++|nrefs:1|case:mixed|eff:yes|nc:5|nw:2|"* ]]
  run bleu ref.txt -i hyp.txt -f text -m chrf --chrf-whitespace --chrf-lowercase --chrf-eps-smoothing
  [[ "$output" == "chrF2|nrefs:1|case:lc|eff:no|nc:6|nw:0|space:yes|"* ]]
}

@test "bleu: TER options" {
  run bleu ref.txt -i hyp.txt -f text -m ter
  [[ "$output" == "TER|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.5.1+nlpipe = "* ]]
  run bleu ref.txt -i hyp.txt -f text -m ter --ter-case-sensitive --ter-normalized --ter-no-punct --ter-asian-support
  [[ "$output" == "TER|nrefs:1|case:mixed|tok:tercom|norm:yes|punct:no|asian:yes|"* ]]
  a="$(bleu ref.txt -i hyp.txt -m ter -b -w 6)"; b="$(bleu ref.txt -i hyp.txt -m ter -b -w 6 --ter-no-punct)"
  [ "$a" != "$b" ]
}

@test "bleu: several references" {
  run bleu ref.txt ref2.txt -i hyp.txt -f text
  [[ "$output" == BLEU\|nrefs:2\|* ]]
}

@test "bleu: --sentence-level (-sl) prints one line per segment" {
  run bleu ref.txt -i hyp.txt --sentence-level
  [ "${#lines[@]}" -eq 3 ]
  [[ "${lines[0]}" == BLEU\|nrefs:1\|case:mixed\|eff:yes\|* ]]
  run bleu ref.txt -i hyp.txt -sl -b -m chrf
  [ "${#lines[@]}" -eq 3 ]
  [[ "${lines[0]}" =~ ^[0-9]+\.[0-9]$ ]]
}

@test "bleu: --short (-sh) abbreviates the text signature, not the JSON one" {
  run bleu ref.txt -i hyp.txt -f text --short
  [[ "$output" == "BLEU|#:1|c:mixed|e:no|tok:13a|s:exp|v:2.5.1+nlpipe = "* ]]
  run bleu ref.txt -i hyp.txt -sh
  [[ "$output" == *'"signature": "nrefs:1|'* ]]
}

@test "bleu: SACREBLEU_FORMAT overrides --format, as in sacreBLEU" {
  run env SACREBLEU_FORMAT=text bleu ref.txt -i hyp.txt -f json
  [[ "$output" == BLEU\|* ]]
}

@test "bleu: --confidence (-ci, -cin): bootstrap interval, seeded by SACREBLEU_SEED" {
  run bleu ref.txt -i hyp.txt -f text --confidence --confidence-n 200
  [ "$status" -eq 0 ]
  [[ "$output" == "BLEU|nrefs:1|bs:200|seed:12345|"*" ("$'\xce\xbc'" = "*" "$'\xc2\xb1'" "* ]]
  a="$(SACREBLEU_SEED=7 bleu ref.txt -i hyp.txt -ci -cin 300 -b -w 6)"
  b="$(SACREBLEU_SEED=7 bleu ref.txt -i hyp.txt -ci -cin 300 -b -w 6)"
  [ "$a" = "$b" ]
  run env SACREBLEU_SEED=7 bleu ref.txt -i hyp.txt -ci -m chrf
  [[ "$output" == *'"confidence_mean": '* ]]
  [[ "$output" == *'"signature": "nrefs:1|bs:1000|seed:7|'* ]]
}

@test "bleu: --paired-bs (-pbs, -pbsn) compares systems with the first" {
  printf 'The cat sat on the mat.\nHello, World!\nA B C D E F\n' >sys2.txt
  run bleu ref.txt -i hyp.txt sys2.txt --paired-bs --paired-bs-n 100
  [ "$status" -eq 0 ]
  [[ "$output" == *'"system": "Baseline: hyp.txt"'* ]]
  [[ "$output" == *'"system": "sys2.txt"'* ]]
  [[ "$output" == *'"p_value": 0.'* ]]
  run bleu ref.txt -i hyp.txt sys2.txt -pbs -pbsn 50 -f text --no-color
  [[ "$output" == *"Paired bootstrap resampling test with 50 resampling trials"* ]]
  [[ "$output" == *" - BLEU       nrefs:1|bs:50|seed:12345|"* ]]
  [[ "$output" != *$'\x1b'* ]]
}

@test "bleu: --paired-ar (-par, -parn) and systems as tab-separated columns" {
  paste hyp.txt ref.txt >both.txt
  run bleu ref.txt --paired-ar --paired-ar-n 99 -f text -nc <both.txt
  [ "$status" -eq 0 ]
  [[ "$output" == *"Baseline"*"System 1"* ]]
  [[ "$output" == *"Paired approximate randomization test with 99 trials"* ]]
  run bleu ref.txt -par -parn 20 -m bleu ter <both.txt
  [[ "$output" == *'"p_value": '* ]]
}

@test "bleu: several systems without a test: a table of scores" {
  paste hyp.txt ref.txt >both.txt
  run bleu ref.txt -m bleu chrf <both.txt
  [[ "$output" == *'"system": "System 1"'*'"BLEU": "'*'"chrF2": "'* ]]
  run bleu ref.txt -f text <both.txt
  [[ "$output" == *"System 2"* ]]
  [[ "$output" == *"Metric signatures"* ]]
}

@test "bleu: warns about tokenized-looking input unless --force or -q" {
  for i in $(seq 100); do echo "a b ."; done >tok.txt
  run_split bleu tok.txt -i tok.txt -b
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"tokenized period"* ]]
  run_split bleu tok.txt -i tok.txt -b --force
  [ -z "$stderr" ]
  run_split bleu tok.txt -i tok.txt -b -q
  [ -z "$stderr" ]
}

@test "bleu: options from a config file; flags win" {
  printf 'metrics: chrf\nwidth: 3\n' >c.yaml
  run bleu -c c.yaml ref.txt -i hyp.txt -b
  [[ "$output" =~ ^[0-9]+\.[0-9]{3}$ ]]
  run bleu -c c.yaml ref.txt -i hyp.txt -b -w 1
  [[ "$output" =~ ^[0-9]+\.[0-9]$ ]]
}

@test "bleu: -l/--language-pair as sacreBLEU takes it with references: a zh target picks tok:zh unless --tokenize; ja/ko need a tokenizer" {
  printf '\xe6\x88\x91\xe7\x88\xb1\xe5\x8c\x97\xe4\xba\xac\xe5\xa4\xa9\xe5\xae\x89\xe9\x97\xa8\n' >r.zh
  printf '\xe6\x88\x91\xe7\x88\xb1\xe5\x8c\x97\xe4\xba\xac\n' >h.zh
  run_split bleu -l en-zh r.zh -i h.zh -f text
  [ "$status" -eq 0 ]
  [ "$output" = "$(bleu r.zh -i h.zh -f text --tokenize zh)" ]
  [[ "$output" == "BLEU|nrefs:1|case:mixed|eff:no|tok:zh|smooth:exp|version:2.5.1+nlpipe = 47.2 "* ]]
  run bleu --language-pair en-zh --tokenize 13a r.zh -i h.zh -f text
  [[ "$output" == *"|tok:13a|"* ]]
  run bleu --language-pair=de-en ref.txt -i hyp.txt -f text
  [ "$output" = "$(bleu ref.txt -i hyp.txt -f text)" ]
  # chrF and TER ignore it
  run_split bleu -l en-ja -m chrf ref.txt -i hyp.txt -b
  [ "$status" -eq 0 ]
  run_split bleu -l en-ja ref.txt -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"-l en-ja: sacreBLEU scores ja with its ja-mecab tokenizer (MeCab), which bleu does not provide; name one with --tokenize"* ]]
  run_split bleu -l english ref.txt -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'english' is not a language pair such as en-de"* ]]
}

@test "bleu: -e/--encoding utf-8 is accepted (sacreBLEU's default), other encodings are refused" {
  run_split bleu -e utf-8 ref.txt -i hyp.txt -b
  [ "$status" -eq 0 ]
  [ "$output" = "$(bleu ref.txt -i hyp.txt -b)" ]
  run_split bleu --encoding UTF8 ref.txt -i hyp.txt -b
  [ "$status" -eq 0 ]
  run_split bleu -e latin-1 ref.txt -i hyp.txt
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"'latin-1': bleu reads UTF-8 only"* ]]
}

@test "bleu --dump-config: an unset --smooth-value is ~ (not \"\"), and the dump reads back" {
  run_split bleu --dump-config
  [[ "$output" == *$'\nsmooth-value: ~\n'* ]]
  [[ "$output" != *'""'* ]]
  printf '%s\n' "$output" >d.yaml
  run bleu -c d.yaml ref.txt -i hyp.txt -b
  [ "$status" -eq 0 ]
  [ "$output" = "$(bleu ref.txt -i hyp.txt -b)" ]
}
