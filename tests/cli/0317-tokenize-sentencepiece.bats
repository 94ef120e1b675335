#!/usr/bin/env bats
# tokenize -m with sentencepiece .model files (tests/data/spm: models made by
# spm_train 0.1.97 with spm_encode's references): how they are found, the
# pieces spm_encode writes, the text spm_decode writes, bad model files,
# and a run of pretrain --tokenizer X.model whose checkpoint tokenizes
# exactly as the model does. (golden/sentencepiece.sh compares every model
# on every line; this is the command line around it.)

load helper

setup() {
  S="$NLPIPE_TOP/tests/data/spm"
  cd "$BATS_TEST_TMPDIR"
}

@test "tokenize: a .model by name, by content, or as a directory's tokenizer.model, spiece.model or sentencepiece.bpe.model" {
  head -40 "$S/input.txt" >in.txt
  head -40 "$S/uni-nfkc.ids" >want.ids
  run_split tokenize -m "$S/uni-nfkc.model" in.txt
  [ "$status" -eq 0 ]
  diff <(echo "$output") want.ids
  cp "$S/uni-nfkc.model" model.bin # no .model: known by its first bytes
  run_split tokenize -m model.bin in.txt
  [ "$status" -eq 0 ]
  diff <(echo "$output") want.ids
  for name in tokenizer.model spiece.model sentencepiece.bpe.model; do
    rm -rf d && mkdir d && cp "$S/uni-nfkc.model" "d/$name"
    run_split tokenize -m d in.txt
    [ "$status" -eq 0 ] || { echo "$name: $stderr"; false; }
    diff <(echo "$output") want.ids
  done
}

@test "tokenize: spm_encode's pieces (an unknown run one piece of its characters) and spm_decode's text" {
  printf 'Hello \xe9\xbe\x8d\xe9\xbe\x8d world\n' >in.txt
  run_split tokenize -m "$S/uni-nfkc.model" --output-format piece in.txt
  [ "$status" -eq 0 ]
  [ "$output" = "▁H el lo ▁ 龍龍 ▁w or l d" ]
  run_split tokenize -m "$S/uni-nfkc.model" in.txt
  [ "$output" = "258 149 145 3 0 263 55 42 11" ]
  # decoding: the first piece's U+2581 goes, <unk> is " ⁇ "
  run_split tokenize -m "$S/uni-nfkc.model" -d <<<"258 149 145 3 0 263 55 42 11"
  [ "$output" = "Hello  ⁇  world" ]
  # pieces read back
  run_split tokenize -m "$S/uni-nfkc.model" -d --input-format piece <<<"▁H el lo ▁w or l d"
  [ "$output" = "Hello world" ]
  # byte fallback: the bytes' pieces, and the character back from them
  run_split tokenize -m "$S/uni-id-bf.model" --output-format piece <<<"龍"
  [ "$output" = "▁ <0xE9> <0xBE> <0x8D>" ]
  run_split tokenize -m "$S/uni-id-bf.model" -d <<<"259 236 193 144"
  [ "$output" = "龍" ]
}

@test "tokenize: truncated, foreign and empty .model files exit 3 naming the file, the byte and the field" {
  head -c 3000 "$S/uni-nfkc.model" >cut.model
  run_split tokenize -m cut.model <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'cut.model' byte "*": pieces["*"]: the data ends inside this field (truncated)"* ]]
  # cut between two fields: still a message, and a smaller model would be a wrong answer
  head -c 3000 "$S/bpe-rules.model" >between.model
  run_split tokenize -m between.model <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'between.model': no trainer_spec after the 232 pieces: a truncated sentencepiece model"* ]]
  echo "hello world" >text.model
  run_split tokenize -m text.model <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'text.model' byte 3: model: "*"not a sentencepiece model"* ]]
  : >empty.model
  run_split tokenize -m empty.model <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'empty.model': no pieces: not a sentencepiece model"* ]]
  printf 'GGUF\x03\x00\x00\x00' >g.model
  run_split tokenize -m g.model <<<"x"
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'g.model' is a GGUF file"* ]]
  [ -z "$output" ]
}

@test "tokenize: ill-formed UTF-8 is replaced byte by byte, as sentencepiece does, and reported once" {
  printf 'a\xe2\x96 b\n' >bad.txt
  run_split tokenize -m "$S/uni-nfkc.model" --output-format piece bad.txt
  [ "$status" -eq 0 ]
  [ "$output" = "▁a �� ▁b" ] # two U+FFFD: one per byte (WHATWG repair would give one)
  [[ "$stderr" == *"replaced 1 invalid UTF-8 sequence"* ]]
  run_split tokenize -m "$S/uni-nfkc.model" --strict bad.txt
  [ "$status" -eq 1 ]
}

@test "pretrain --tokenizer X.model: the checkpoint's tokenizer.json holds the model and encodes as it does" {
  head -120 "$NLPIPE_TOP/tools/demo-data/lm-train.txt" >lm.txt
  run_split pretrain --preset tiny --max-length 16 -B 2 -t 1 -q --steps 3 --tokenizer "$S/uni-nfkc.model" lm.txt -m run
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ -f run/latest/tokenizer.json ]
  grep -q '"nlpipe_sentencepiece_model"' run/latest/tokenizer.json
  run_split tokenize -m run/latest/tokenizer.json "$S/input.txt"
  [ "$status" -eq 0 ]
  diff <(echo "$output") "$S/uni-nfkc.ids"
  # the model's vocabulary is the pieces; generate decodes as spm_decode
  run_split generate -m run -p "Hello" -n 3 --seed 1 --greedy
  [ "$status" -eq 0 ]
}

@test "pretrain --arch transformer --tokenizer X.model, then translate: the PyTorch twins' spm8k.model (or a committed one)" {
  M="$NLPIPE_TOP/../shared/peers/twins/spm8k.model"
  [ -f "$M" ] || M="$S/uni-nfkc.model"
  head -200 "$NLPIPE_TOP/tools/demo-data/ende-dev.tsv" | cut -f1 >s.en
  head -200 "$NLPIPE_TOP/tools/demo-data/ende-dev.tsv" | cut -f2 >t.de
  run_split pretrain --arch transformer --preset tiny --tokenizer "$M" --src s.en --tgt t.de --steps 3 -B 4 -t 1 -q -m run
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -q '"nlpipe_sentencepiece_model"' run/latest/tokenizer.json
  # the run's tokenizer encodes as the .model does
  diff <(tokenize -m "$M" s.en) <(tokenize -m run/latest/tokenizer.json s.en)
  run_split translate -m run -t 1 --max-length 8 < <(head -3 s.en)
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(printf '%s\n' "$output" | wc -l)" -eq 3 ]
}
