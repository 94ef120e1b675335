#!/usr/bin/env bats
# train-wordpiece: every option, both scores, the output formats, and bad input.

load helper

# the reference corpora and HF's results on them (../shared, else tests/data/golden)
train() { ref_path vectors/tokenize/train; }
corpus() { echo "$(train)/$1.corpus.txt"; }

# tokens of a tokenizer.json in id order, one per line
tokens() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["model"]["vocab"]; [print(k) for k,i in sorted(v.items(), key=lambda x: x[1])]' "$1"; }
# the token set of HF's vocabulary file, sorted
hfset() { cut -f1 "$(train)/$1.wordpiece.vocab.tsv" | LC_ALL=C sort; }

@test "train-wordpiece: the lecture's example, merge by merge (-vv shows the scores)" {
  run_split train-wordpiece -vv --special-tokens '' --unk-token '[UNK]' --min-frequency 0 --vocab-size 12 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/h.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"merge ##g ##s -> ##gs: 5 / (20 * 5) = 0.05"* ]]
  [[ "$stderr" == *"merge p ##u -> pu: 17 / (17 * 36)"* ]]
  [[ "$stderr" == *"merge h ##u -> hu: 15 / (15 * 19)"* ]]
  [[ "$stderr" == *"merge b ##u -> bu: 4 / (4 * 4) = 0.25"* ]]
  [ "$(tokens "$BATS_TEST_TMPDIR/h.json" | tr '\n' ' ')" = "[UNK] b h p ##g ##n ##s ##u ##gs pu hu bu " ]
  # its encoding examples, with the vocabulary before bu (and no ##m)
  train-wordpiece -q --special-tokens '[UNK]' --min-frequency 0 --vocab-size 11 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/h.json"
  run tokenize -m "$BATS_TEST_TMPDIR/h.json" --output-format piece --no-special-tokens <<<"bugs hug bum"
  [ "$output" = "b ##u ##gs hu ##g [UNK]" ]
}

@test "train-wordpiece --score frequency: HF's WordPiece token sets on the reference corpora" {
  for c in hug ties; do
    train-wordpiece -q --score frequency --special-tokens '' --min-frequency 0 "$(corpus $c)" -o "$BATS_TEST_TMPDIR/$c.json"
    [ "$(tokens "$BATS_TEST_TMPDIR/$c.json" | LC_ALL=C sort)" = "$(hfset $c)" ]
  done
  # overlap: HF breaks a tie by ids it assigns in hash order; ours is its other outcome
  train-wordpiece -q --score frequency --special-tokens '' --min-frequency 0 "$(corpus overlap)" -o "$BATS_TEST_TMPDIR/o.json"
  [ "$(tokens "$BATS_TEST_TMPDIR/o.json" | LC_ALL=C sort)" = "$(hfset overlap | sed -e 's/^##abc$/abcab/' -e 's/^##bc$/##ab/' | LC_ALL=C sort)" ]
  # the vocabulary starts with every character unprefixed, sorted
  [ "$(tokens "$BATS_TEST_TMPDIR/hug.json" | head -7 | tr '\n' ' ')" = "b g h n p s u " ]
}

@test "train-wordpiece --vocab-size and --min-frequency (default 2)" {
  run_split train-wordpiece --special-tokens '' "$(corpus hug)" -o "$BATS_TEST_TMPDIR/a.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"vocabulary of "*" tokens, not 30000: no pair left that reaches --min-frequency"* ]]
  train-wordpiece -q --special-tokens '' --min-frequency 6 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/b.json"
  # pairs seen fewer than 6 times never merge: no ##gs (5), no bu (4)
  ! tokens "$BATS_TEST_TMPDIR/b.json" | grep -qx '##gs'
  ! tokens "$BATS_TEST_TMPDIR/b.json" | grep -qx 'bu'
  tokens "$BATS_TEST_TMPDIR/b.json" | grep -qx '##ug'
  train-wordpiece -q --special-tokens '' --vocab-size 9 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/c.json"
  [ "$(tokens "$BATS_TEST_TMPDIR/c.json" | wc -l)" -eq 9 ]
}

@test "train-wordpiece --vocab-size smaller than the alphabet: exit 1 (it depends on the data), with the size needed" {
  run_split train-wordpiece --vocab-size 10 "$(corpus hug)"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"vocabulary size 10 is smaller than the 5 special tokens plus the 7 characters of the initial alphabet: this data needs a vocabulary of at least 12"* ]]
  [ -z "$output" ]
  run_split train-wordpiece --score frequency --vocab-size 12 "$(corpus hug)"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"smaller than the 5 special tokens plus the 7 characters"* ]]
  run_split train-wordpiece --vocab-size 0 "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-wordpiece --special-tokens: BERT's five by default, first ids, cut out of the text; '' for none" {
  { cat "$(corpus hug)"; echo 'hug[SEP]pug [MASK]'; } >"$BATS_TEST_TMPDIR/in.txt"
  train-wordpiece -q "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/d.json"
  [ "$(tokens "$BATS_TEST_TMPDIR/d.json" | head -6 | tr '\n' ' ')" = "[PAD] [UNK] [CLS] [SEP] [MASK] b " ]
  [ "$(grep -c '"special": true' "$BATS_TEST_TMPDIR/d.json")" -eq 5 ]
  grep -q '"type": "BertProcessing"' "$BATS_TEST_TMPDIR/d.json"
  # nothing of the special tokens' text was learned
  [ "$(tokens "$BATS_TEST_TMPDIR/d.json" | tail -n +6 | grep -c '[][A-Z]')" -eq 0 ]
  train-wordpiece -q --special-tokens '<s>, </s>,[UNK]' "$(corpus hug)" -o "$BATS_TEST_TMPDIR/s.json"
  [ "$(tokens "$BATS_TEST_TMPDIR/s.json" | head -3 | tr '\n' ' ')" = "<s> </s> [UNK] " ]
  ! grep -q 'BertProcessing' "$BATS_TEST_TMPDIR/s.json"
  run_split train-wordpiece --special-tokens '' "$(corpus hug)" -o "$BATS_TEST_TMPDIR/n.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"the unknown token '[UNK]' is not a special token"*"tokenize will refuse the file"* ]]
  [ "$(tokens "$BATS_TEST_TMPDIR/n.json" | head -1)" = "b" ]
  # such a tokenizer could not encode a word it cannot spell: refused at load
  run_split tokenize -m "$BATS_TEST_TMPDIR/n.json" <<<"xyz"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"n.json': unk_token '[UNK]' is not in the vocabulary"* ]]
}

@test "train-wordpiece --unk-token is added to the special tokens and used for unknown words" {
  train-wordpiece -q --special-tokens '' --unk-token '<unk>' "$(corpus hug)" -o "$BATS_TEST_TMPDIR/u.json"
  [ "$(tokens "$BATS_TEST_TMPDIR/u.json" | head -1)" = "<unk>" ]
  grep -q '"unk_token": "<unk>"' "$BATS_TEST_TMPDIR/u.json"
  run tokenize -m "$BATS_TEST_TMPDIR/u.json" --output-format piece <<<"hug zzz"
  [ "$output" = "hug <unk>" ]
  run_split train-wordpiece --unk-token '' "$(corpus hug)"
  [ "$status" -eq 2 ]
}

@test "train-wordpiece --prefix: another continuation mark, in the model and the decoder" {
  train-wordpiece -q --prefix '@@' --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  tokens "$BATS_TEST_TMPDIR/p.json" | grep -qx '@@gs'
  grep -q '"continuing_subword_prefix": "@@"' "$BATS_TEST_TMPDIR/p.json"
  grep -q '"prefix": "@@"' "$BATS_TEST_TMPDIR/p.json"
  run tokenize -m "$BATS_TEST_TMPDIR/p.json" --no-special-tokens <<<"hugs pun"
  run tokenize -m "$BATS_TEST_TMPDIR/p.json" -d <<<"$output"
  [ "$output" = "hugs pun" ]
  run_split train-wordpiece --prefix '' "$(corpus hug)"
  [ "$status" -eq 2 ]
  run_split train-wordpiece --prefix '# #' "$(corpus hug)"
  [ "$status" -eq 2 ]
  run_split train-wordpiece --prefix '@@' --format vocab "$(corpus hug)"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"a vocab.txt assumes the unknown token [UNK], the prefix ##"* ]]
}

@test "train-wordpiece --lowercase (default), --no-lowercase, --strip-accents, --no-strip-accents" {
  printf 'Caf\xc3\xa9 CAF\xc3\x89 Caf\xc3\xa9\n' >"$BATS_TEST_TMPDIR/c.txt"
  # the initial alphabet (no pair reaches --min-frequency 100), sorted
  t() { train-wordpiece -q --special-tokens '' --min-frequency 100 "$@" "$BATS_TEST_TMPDIR/c.txt" -o "$BATS_TEST_TMPDIR/x.json"; tokens "$BATS_TEST_TMPDIR/x.json" | LC_ALL=C sort | tr '\n' ' '; }
  [ "$(t)" = "##a ##e ##f c " ]
  [ "$(t --lowercase)" = "##a ##e ##f c " ]
  [ "$(t --no-strip-accents)" = "$(printf '##a ##f ##\xc3\xa9 c ')" ]
  [ "$(t --no-lowercase)" = "$(printf '##A ##F ##a ##f ##\xc3\x89 ##\xc3\xa9 C ')" ]
  [ "$(t --no-lowercase --strip-accents)" = "##A ##E ##F ##a ##e ##f C " ]
  grep -q '"strip_accents": true' "$BATS_TEST_TMPDIR/x.json"
  grep -q '"lowercase": false' "$BATS_TEST_TMPDIR/x.json"
  # the default writes HF's null: strip when lowercasing
  train-wordpiece -q "$BATS_TEST_TMPDIR/c.txt" -o "$BATS_TEST_TMPDIR/d.json"
  grep -q '"strip_accents": null' "$BATS_TEST_TMPDIR/d.json"
  printf 'strip-accents: false\n' >"$BATS_TEST_TMPDIR/s.yaml"
  run train-wordpiece -c "$BATS_TEST_TMPDIR/s.yaml" --dump-config
  [[ "$output" == *"strip-accents: \"false\""* ]]
  run train-wordpiece -c "$BATS_TEST_TMPDIR/s.yaml" --strip-accents --dump-config
  [[ "$output" == *"strip-accents: \"true\""* ]]
  printf 'strip-accents: maybe\n' >"$BATS_TEST_TMPDIR/bad.yaml"
  run_split train-wordpiece -c "$BATS_TEST_TMPDIR/bad.yaml" --dump-config
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'maybe' is not true, false or auto"* ]]
}

@test "train-wordpiece --limit-alphabet keeps the most frequent characters" {
  train-wordpiece -q --special-tokens '' --limit-alphabet 4 --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/l.json"
  # u 36, g 20, p 17, n 16 are kept; h, b, s are dropped from the words
  # ("hug" is u ##g, "pun" p ##u ##n)
  [ "$(tokens "$BATS_TEST_TMPDIR/l.json" | head -5 | tr '\n' ' ')" = "p u ##g ##n ##u " ]
  ! tokens "$BATS_TEST_TMPDIR/l.json" | grep -q '[hbs]'
}

@test "train-wordpiece --format vocab writes BERT's vocab.txt; tokenize reads it back to the same ids" {
  need_shared
  d="$BATS_TEST_TMPDIR"
  head -2000 "$SHARED/data/lm/valid.txt" >"$d/in.txt"
  train-wordpiece -q --vocab-size 800 "$d/in.txt" -o "$d/t.json"
  train-wordpiece -q --vocab-size 800 --format vocab "$d/in.txt" -o "$d/vocab.txt"
  [ "$(wc -l <"$d/vocab.txt")" -eq 800 ]
  [ "$(head -5 "$d/vocab.txt" | tr '\n' ' ')" = "[PAD] [UNK] [CLS] [SEP] [MASK] " ]
  [ "$(tokens "$d/t.json")" = "$(cat "$d/vocab.txt")" ]
  [ "$(tokenize -m "$d/vocab.txt" "$d/in.txt" | md5sum)" = "$(tokenize -m "$d/t.json" "$d/in.txt" | md5sum)" ]
  # cased: the vocab.txt cannot say so; a warning, and tokenize --cased reads it right
  run_split train-wordpiece --no-lowercase --vocab-size 800 --format vocab "$d/in.txt" -o "$d/cased.txt"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"a vocab.txt does not record the normalizer: load it with tokenize --cased"* ]]
  train-wordpiece -q --no-lowercase --vocab-size 800 "$d/in.txt" -o "$d/cased.json"
  [ "$(tokenize -m "$d/cased.txt" --cased "$d/in.txt" | md5sum)" = "$(tokenize -m "$d/cased.json" "$d/in.txt" | md5sum)" ]
  run_split train-wordpiece --format yaml "$d/in.txt"
  [ "$status" -eq 2 ]
}

@test "train-wordpiece -i, several FILE arguments, standard input, --max-sentences" {
  train-wordpiece -q --min-frequency 0 -i "$(corpus hug)" "$(corpus ties)" -o "$BATS_TEST_TMPDIR/two.json"
  cat "$(corpus hug)" "$(corpus ties)" | train-wordpiece -q --min-frequency 0 -o "$BATS_TEST_TMPDIR/stdin.json"
  cmp "$BATS_TEST_TMPDIR/two.json" "$BATS_TEST_TMPDIR/stdin.json"
  head -10 "$(corpus hug)" >"$BATS_TEST_TMPDIR/ten.txt"
  train-wordpiece -q --min-frequency 0 --max-sentences 10 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/m.json"
  train-wordpiece -q --min-frequency 0 "$BATS_TEST_TMPDIR/ten.txt" -o "$BATS_TEST_TMPDIR/t.json"
  cmp "$BATS_TEST_TMPDIR/m.json" "$BATS_TEST_TMPDIR/t.json"
}

@test "train-wordpiece -t: the output does not depend on the thread count (both scores)" {
  need_shared
  head -n 10000 "$SHARED/data/lm/train.txt" >"$BATS_TEST_TMPDIR/in.txt"
  for s in likelihood frequency; do
    train-wordpiece -q --score $s --vocab-size 3000 -t 1 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/t1.json"
    train-wordpiece -q --score $s --vocab-size 3000 --threads 2 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/t2.json"
    cmp "$BATS_TEST_TMPDIR/t1.json" "$BATS_TEST_TMPDIR/t2.json"
  done
  # nor on the order of the lines
  tac "$BATS_TEST_TMPDIR/in.txt" >"$BATS_TEST_TMPDIR/rev.txt"
  train-wordpiece -q --vocab-size 3000 "$BATS_TEST_TMPDIR/rev.txt" -o "$BATS_TEST_TMPDIR/r.json"
  train-wordpiece -q --vocab-size 3000 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/f.json"
  cmp "$BATS_TEST_TMPDIR/r.json" "$BATS_TEST_TMPDIR/f.json"
  run_split train-wordpiece -t -2 "$BATS_TEST_TMPDIR/in.txt"
  [ "$status" -eq 2 ]
}

@test "train-wordpiece --progress reports on stderr (share, rate, time left); --no-progress and the default off a terminal are silent" {
  run_split train-wordpiece --progress --special-tokens '' --min-frequency 0 "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  # the input's size is known: the share read, the rate and the time left (or taken)
  last="$(tr '\r' '\n' <<<"$stderr" | grep 'counting words' | tail -1)"
  [[ "$last" =~ counting\ words:\ 100%\ of\ 0\.0\ MB,\ [0-9.]+\ MB/s,\ [0-9.]+\ s,\ 36\ lines ]] || { echo "$last"; false; }
  # training stops before --vocab-size: the last line says where it came to
  last="$(tr '\r' '\n' <<<"$stderr" | grep merging | tail -1)"
  [[ "$last" =~ merging:\ 16\ tokens,\ [0-9]+\ merges/s,\ [0-9.]+\ s,\ 9\ merges ]] || { echo "$last"; false; }
  run_split train-wordpiece --no-progress -q "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ -z "$stderr" ]
  run_split train-wordpiece -q "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [ -z "$stderr" ]
  run_split train-wordpiece -v "$(corpus hug)" -o "$BATS_TEST_TMPDIR/p.json"
  [[ "$stderr" == *"36 lines, 36 words, 5 distinct"* ]]
}

@test "train-wordpiece: an empty corpus, or one of white space and control characters, is an error (exit 1)" {
  run_split train-wordpiece </dev/null
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"no words to learn from: the input is empty"* ]]
  run_split train-wordpiece <<<$'   \n\t\x01\x02\n'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"only white space, control characters or special tokens"* ]]
  [ -z "$output" ]
  run_split train-wordpiece <<<'[CLS] [SEP]'
  [ "$status" -eq 1 ]
}

@test "train-wordpiece: a missing input is an I/O error; an unwritable output leaves nothing behind" {
  run_split train-wordpiece "$BATS_TEST_TMPDIR/missing.txt"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot open '$BATS_TEST_TMPDIR/missing.txt'"* ]]
  run_split train-wordpiece -o "$BATS_TEST_TMPDIR/no/such/dir/t.json" <<<"a b a b"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"cannot create"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/no" ]
}

@test "train-wordpiece: invalid UTF-8 is replaced with a warning; --strict names file, line and byte" {
  printf 'ab ab\nab \xff ab\n' >"$BATS_TEST_TMPDIR/bad.txt"
  run_split train-wordpiece --min-frequency 0 "$BATS_TEST_TMPDIR/bad.txt" -o "$BATS_TEST_TMPDIR/x.json"
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"replaced 1 invalid UTF-8 sequence with U+FFFD (the first at '$BATS_TEST_TMPDIR/bad.txt' line 2 byte 9)"* ]]
  # BERT's normalizer deletes U+FFFD: it is no token
  ! tokens "$BATS_TEST_TMPDIR/x.json" | grep -q $'\xef\xbf\xbd'
  run_split train-wordpiece --strict "$BATS_TEST_TMPDIR/bad.txt" -o "$BATS_TEST_TMPDIR/x.json"
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"bad.txt' line 2 byte 9: invalid UTF-8"* ]]
}

@test "train-wordpiece: the tokenizer.json is BERT's pipeline: template, pairs, decoding" {
  need_shared
  head -1000 "$SHARED/data/lm/valid.txt" >"$BATS_TEST_TMPDIR/in.txt"
  train-wordpiece -q --vocab-size 1000 "$BATS_TEST_TMPDIR/in.txt" -o "$BATS_TEST_TMPDIR/t.json"
  for k in '"type": "WordPiece"' '"type": "BertNormalizer"' '"type": "BertPreTokenizer"' '"max_input_chars_per_word": 100'; do
    grep -q "$k" "$BATS_TEST_TMPDIR/t.json"
  done
  run tokenize -m "$BATS_TEST_TMPDIR/t.json" --output-format piece --pair --type-ids <<<$'The package\tIs it?'
  [[ "$output" == "[CLS] "*" [SEP] "*" [SEP]"$'\t'"0 "*" 1" ]]
  run tokenize -m "$BATS_TEST_TMPDIR/t.json" <<<"The package, it is."
  run tokenize -m "$BATS_TEST_TMPDIR/t.json" -d --no-special-tokens <<<"$output"
  [ "$output" = "the package, it is." ]
}

@test "train-wordpiece: special tokens, --unk-token and --prefix must be valid UTF-8 (usage error before training)" {
  for opt in --special-tokens --unk-token --prefix; do
    run_split train-wordpiece "$opt" $'x\xff' --min-frequency 1 -o "$BATS_TEST_TMPDIR/u.json" <<<"hug pug"
    [ "$status" -eq 2 ]
    [[ "$stderr" == *"train-wordpiece: $opt: invalid UTF-8 at byte 1"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/u.json" ]
  done
}

@test "train-wordpiece --format vocab with another --prefix or --unk-token is refused before training" {
  # the input does not exist: the refusal must come before any reading
  run_split train-wordpiece --format vocab --prefix '@@' -o "$BATS_TEST_TMPDIR/v.txt" "$BATS_TEST_TMPDIR/missing"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--format vocab: a vocab.txt assumes the unknown token [UNK], the prefix ##"*"--prefix '@@'"* ]]
  run_split train-wordpiece --format vocab --unk-token '<unk>' -o "$BATS_TEST_TMPDIR/v.txt" "$BATS_TEST_TMPDIR/missing"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--unk-token '<unk>'"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/v.txt" ]
}

@test "train-wordpiece --progress from a pipe: no share of an unknown size, the bytes and rate instead" {
  run_split bash -c 'cat "$1" | train-wordpiece --progress --min-frequency 0 -o "$2"' _ "$(corpus hug)" "$BATS_TEST_TMPDIR/p.json"
  [ "$status" -eq 0 ]
  last="$(tr '\r' '\n' <<<"$stderr" | grep 'counting words' | tail -1)"
  [[ "$last" =~ counting\ words:\ 0\.0\ MB,\ [0-9.]+\ MB/s,\ [0-9.]+\ s,\ 36\ lines ]] || { echo "$last"; false; }
  [[ "$last" != *%* ]]
}
