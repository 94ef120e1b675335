#!/usr/bin/env bats
# Rotary positions and the LLaMA block through the tools: pretrain --arch llama
# and --positions rope (their checkpoints, HF's config.json), generate and
# finetune on them and on HuggingFace LLaMA-family directories (sharded BF16
# safetensors with the index), evaluation past the trained length (rotary
# positions extrapolate, a learned table ends), and bad directories and configs.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  cat "$NLPIPE_TOP/tools/demo-data/ref.de" "$NLPIPE_TOP/tools/demo-data/hyp.de" >"$W/corpus.txt"
  "$NLPIPE_BIN/train-bpe" --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o "$W/tok.json" "$W/corpus.txt"
  "$NLPIPE_BIN/pretrain" --arch llama --preset tiny --max-length 32 -B 8 -t 1 --steps 60 --lr 3e-3 --warmup 10 -q \
    --tokenizer "$W/tok.json" -m "$W/llama" "$W/corpus.txt"
  # HF's layout of that model: config.json, two BF16 shards and the index, the tokenizer
  mkdir "$W/hf"
  cp "$W/llama/latest/config.json" "$W/hf/"
  cp "$W/tok.json" "$W/hf/tokenizer.json"
  python3 - "$W/llama/latest/model.safetensors" "$W/hf" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
h.pop("__metadata__")
names = sorted(h)
wm = {}
for s in range(2):
    fn = "model-%05d-of-00002.safetensors" % (s + 1)
    hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for k in names[s::2]:
        v = h[k]
        lo, hi = v["data_offsets"]
        f = struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
        u = [struct.unpack("<I", struct.pack("<f", x))[0] for x in f]
        raw = struct.pack("<%dH" % len(u), *[((x + 0x7fff + ((x >> 16) & 1)) >> 16) & 0xffff for x in u])
        hdr[k] = {"dtype": "BF16", "shape": v["shape"], "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
        wm[k] = fn
    j = json.dumps(hdr).encode()
    j += b" " * ((8 - (8 + len(j)) % 8) % 8)
    open(sys.argv[2] + "/" + fn, "wb").write(struct.pack("<Q", len(j)) + j + b"".join(blobs))
json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, open(sys.argv[2] + "/model.safetensors.index.json", "w"))
PY
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
}

@test "pretrain --arch llama: a checkpoint with HF's names, config.json and format pt; its configuration" {
  ck="$W/llama/latest"
  [ -f "$ck/config.json" ] && [ -f "$ck/tokenizer.json" ]
  grep -q '"model_type": "llama"' "$ck/config.json"
  grep -q '"num_key_value_heads": 2' "$ck/config.json"
  grep -q '"tie_word_embeddings": true' "$ck/config.json"
  head -c 4000 "$ck/model.safetensors" | grep -aq '"format":"pt"'
  head -c 4000 "$ck/model.safetensors" | grep -aq 'model.layers.0.mlp.gate_proj.weight'
  # the model's configuration travels in the metadata: tiny's LLaMA sizes
  head -c 4000 "$ck/model.safetensors" | grep -aq 'arch: llama\\u000avocab-size: 400\\u000ad-model: 64\\u000aheads: 4\\u000akv-heads: 2\\u000ad-ff: 176'
  run_split pretrain --arch llama --preset small --kv-heads 1 --tie-output false --dump-config
  [ "$status" -eq 0 ]
  [[ "$output" == *"arch: llama"* && "$output" == *"kv-heads: 1"* && "$output" == *'tie-output: "false"'* ]]
}

@test "generate: our llama run and its HF layout (BF16 shards) continue a prompt alike" {
  run_split generate -m "$W/llama" --greedy -n 12 -p 'Die'
  [ "$status" -eq 0 ] && [ -n "$output" ]
  ours="$output"
  run_split generate -m "$W/llama" --input-format id --output-format id --greedy -n 12 <<<'5 60 33'
  [ "$status" -eq 0 ]
  ids="$output"
  # the BF16 shards hold the weights rounded: decoded with --bf16 both read the same bits
  run_split generate -m "$W/hf" --input-format id --output-format id --greedy -n 12 --bf16 <<<'5 60 33'
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  hf="$output"
  run_split generate -m "$W/llama" --input-format id --output-format id --greedy -n 12 --bf16 <<<'5 60 33'
  [ "$output" = "$hf" ]
  [ -n "$ids" ] && [ -n "$ours" ]
}

@test "pretrain --init and finetune --init take the HF directory" {
  run_split pretrain --init "$W/hf" --steps 3 --max-length 32 -B 4 -t 1 -q -m "$T/cont" "$W/corpus.txt"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  grep -q '^arch: llama' "$T/cont/latest/run.yaml"
  printf 'a\tDie Katze schläft\nb\tEin Hund bellt laut\na\tDie Maus läuft\nb\tEin Vogel singt\n' >"$T/cls.tsv"
  run_split finetune --init "$W/hf" --epochs 1 -B 2 --max-length 24 -t 1 -q -m "$T/cls" "$T/cls.tsv"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  run_split finetune predict -m "$T/cls" <<<'Die Katze'
  [ "$status" -eq 0 ] && [[ "$output" == [ab]$'\t'* ]]
}

@test "generate --perplexity: rotary positions score windows past the trained length, a learned table cannot" {
  "$NLPIPE_BIN/pretrain" --preset tiny --positions rope --rope-layout interleaved --max-length 32 -B 8 -t 1 \
    --steps 20 -q --tokenizer "$W/tok.json" -m "$T/rope" "$W/corpus.txt"
  run_split generate -m "$T/rope" --perplexity --max-length 128 "$W/corpus.txt"
  [ "$status" -eq 0 ] && [[ "$output" == '{"tokens": '* ]]
  [[ "$stderr" == *"beyond the 64 positions the model was made for"* ]]
  run_split generate -m "$W/llama" --perplexity --max-length 100 "$W/corpus.txt"
  [ "$status" -eq 0 ]
  "$NLPIPE_BIN/pretrain" --preset tiny --max-length 32 -B 8 -t 1 --steps 2 -q --tokenizer "$W/tok.json" \
    -m "$T/learned" "$W/corpus.txt"
  run_split generate -m "$T/learned" --perplexity --max-length 128 "$W/corpus.txt"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"--max-length 128: the model has 64 learned positions"* ]]
}

@test "pretrain: rotary options that do not apply are usage errors naming them" {
  run_split pretrain --rope-theta 500 --steps 1 --tokenizer "$W/tok.json" -m "$T/x" "$W/corpus.txt"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"'rope-theta' applies to rotary positions"* ]]
  run_split pretrain --arch llama --positions learned --steps 1 --tokenizer "$W/tok.json" -m "$T/x" "$W/corpus.txt"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"key 'positions' does not apply to arch llama"* ]]
  run_split pretrain --arch llama --heads 4 --kv-heads 3 --steps 1 --tokenizer "$W/tok.json" -m "$T/x" "$W/corpus.txt"
  [ "$status" -eq 2 ] && [[ "$stderr" == *"heads 4 is not a multiple of kv-heads 3"* ]]
  [ ! -e "$T/x" ]
}

@test "bad HF directories and configs: exit 3 naming the file and the key" {
  cp -r "$W/hf" "$T/d"
  sed -i 's/"model_type": "llama"/"model_type": "qwen2"/' "$T/d/config.json"
  run_split generate -m "$T/d" --input-format id --output-format id -n 2 <<<'1 2'
  [ "$status" -eq 3 ] && [[ "$stderr" == *"config.json': config key 'model_type' is 'qwen2'"* ]]
  cp "$W/hf/config.json" "$T/d/config.json"
  sed -i 's/"rope_scaling": null/"rope_scaling": {"type": "linear", "factor": 2.0}/' "$T/d/config.json"
  run_split generate -m "$T/d" --input-format id --output-format id -n 2 <<<'1 2'
  [ "$status" -eq 3 ] && [[ "$stderr" == *"'rope_scaling' is of type 'linear'"* ]]
  run_split pretrain --init "$T/d" --steps 1 -q -m "$T/p" "$W/corpus.txt"
  [ "$status" -eq 3 ] && [[ "$stderr" == *"rope_scaling"* ]]
  cp "$W/hf/config.json" "$T/d/config.json"
  rm "$T/d/model-00002-of-00002.safetensors"
  run_split generate -m "$T/d" --input-format id --output-format id -n 2 <<<'1 2'
  [ "$status" -eq 3 ] && [[ "$stderr" == *"names shard 'model-00002-of-00002.safetensors'"* ]]
  run_split finetune --init "$T/d" --epochs 1 -q -m "$T/f" "$W/corpus.txt"
  [ "$status" -eq 3 ]
}
