#!/usr/bin/env bats
# The model tools under attack (issue 31): pretrain, finetune, generate and
# translate fed corrupt weights and training states, hostile configurations,
# special files, copied and shared run directories, outputs that are inputs
# and options out of range. Each @test is one numbered point of the issue
# ("31.N"); rows use `row STATUS 'PATTERN' COMMAND...` as 0710 does: no
# signal death, the documented status, a message naming what is wrong. A
# command that could hang runs under `timeout` (a hang is status 124, never
# a pass). Tiny models on the bundled sentences.

load helper

setup_file() {
  W="$BATS_FILE_TMPDIR"
  D="$NLPIPE_TOP/tools/demo-data"
  cd "$W"
  cat "$D/ref.de" "$D/hyp.de" >corpus.txt
  head -20 "$D/src.en" >text.txt
  head -160 "$D/src.en" >train.en
  head -160 "$D/tgt.de" >train.de
  awk '{ print } NR % 3 == 0 { print "" }' "$D/src.en" >docs.txt
  paste -d'\t' <(sed 's/.*/en/' "$D/src.en") "$D/src.en" >cls.tsv
  paste -d'\t' <(sed 's/.*/de/' "$D/tgt.de") "$D/tgt.de" >>cls.tsv
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 400 -o tok.json corpus.txt
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<|endoftext|>' --vocab-size 300 -o tok300.json corpus.txt
  "$NLPIPE_BIN/train-wordpiece" -q --vocab-size 600 -o wp.json "$D/src.en" "$D/tgt.de"
  "$NLPIPE_BIN/train-bpe" -q --byte-level --special-tokens '<pad>,<s>,</s>' --vocab-size 500 -o mt.json train.en train.de
  "$NLPIPE_BIN/tokenize" -m tok.json --output-format bin -o train.bin corpus.txt
  local Q=(--preset tiny -t 1 -q)
  "$NLPIPE_BIN/pretrain" "${Q[@]}" --max-length 32 -B 4 --steps 2 --tokenizer tok.json -m gpt corpus.txt
  "$NLPIPE_BIN/pretrain" --arch bert "${Q[@]}" --tokenizer wp.json --steps 2 -B 8 --max-length 48 -m bert docs.txt
  "$NLPIPE_BIN/pretrain" --arch transformer "${Q[@]}" --tokenizer mt.json --src train.en --tgt train.de --steps 2 \
    --batch-tokens 600 -m mt
  "$NLPIPE_BIN/finetune" -t 1 -q -B 16 --max-length 48 --init bert --epochs 1 -m cls cls.tsv
  # st.py: copies of safetensors files with a tensor's values or metadata changed
  cat >st.py <<'PY'
import json, re, struct, sys
def load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    return bytearray(b), n, json.loads(b[8:8 + n])
def save(p, b, n, h):
    j = json.dumps(h).encode(); j += b' ' * (-(8 + len(j)) % 8)
    open(p, 'wb').write(struct.pack('<Q', len(j)) + j + bytes(b[8 + n:]))
def span(b, n, h, name):
    s, e = h[name]['data_offsets']
    return 8 + n + s, 8 + n + e
cmd, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
b, n, h = load(src)
if cmd == 'f32':        # f32 TENSOR FIRST COUNT VALUE: COUNT values from FIRST set to VALUE
    name, first, count, v = sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    a, _ = span(b, n, h, name)
    for i in range(first, first + count):
        b[a + 4 * i:a + 4 * i + 4] = struct.pack('<f', v)
elif cmd == 'bit':      # bit TENSOR INDEX BIT: flips one bit of a float
    name, i, bit = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    a, _ = span(b, n, h, name)
    x = struct.unpack('<I', b[a + 4 * i:a + 4 * i + 4])[0] ^ (1 << bit)
    b[a + 4 * i:a + 4 * i + 4] = struct.pack('<I', x)
elif cmd == 'zero':     # zero TENSOR: every byte 0
    a, e = span(b, n, h, sys.argv[4])
    b[a:e] = bytes(e - a)
elif cmd == 'meta':     # meta KEY VALUE: a metadata entry
    h['__metadata__'][sys.argv[4]] = sys.argv[5]
elif cmd == 'yaml':     # yaml KEY VALUE: a key of the nlpipe_config metadata
    m = h['__metadata__']
    m['nlpipe_config'] = re.sub(r'(?m)^%s: .*$' % re.escape(sys.argv[4]), '%s: %s' % (sys.argv[4], sys.argv[5]),
                                m['nlpipe_config'])
elif cmd == 'eos':      # eos: an encoder-decoder whose decoder always says </s> first
    cfg = json.loads(h['__metadata__']['config'])
    d, eos, L = cfg['d_model'], cfg['eos_id'], cfg['n_dec'] - 1
    a, _ = span(b, n, h, 'tgt_emb.weight')
    row = struct.unpack('<%df' % d, b[a + 4 * eos * d:a + 4 * (eos + 1) * d])
    w, _ = span(b, n, h, 'decoder.layers.%d.ln3.weight' % L)
    bb, _ = span(b, n, h, 'decoder.layers.%d.ln3.bias' % L)
    b[w:w + 4 * d] = struct.pack('<%df' % d, *([0.0] * d))
    b[bb:bb + 4 * d] = struct.pack('<%df' % d, *[10 * x for x in row])
save(out, b, n, h)
PY
}

setup() {
  W="$BATS_FILE_TMPDIR"
  T="$BATS_TEST_TMPDIR"
  O="$T/out"
  cd "$W"
}

# a background run a failed test left
teardown() { [ -z "${BG:-}" ] || kill -KILL "$BG" 2>/dev/null || true; }

# row STATUS PATTERN COMMAND...: as 0710's, standard input /dev/null
row() {
  local want="$1" pat="$2"
  shift 2
  run_split "$@" </dev/null
  [ "$status" -lt 128 ] || { echo "killed by signal $((status - 128)): $stderr"; false; }
  [ "$status" -ne 124 ] || { echo "timed out (a hang): $stderr"; false; }
  [ "$status" -eq "$want" ] || { echo "status $status, expected $want: $stderr"; false; }
  # shellcheck disable=SC2053
  [[ "$stderr" == $pat ]] || { echo "message: $stderr"; echo "expected: $pat"; false; }
}

# model DIR CHECKPOINT CMD ARGS...: DIR gets CHECKPOINT's tokenizer and its
# model.safetensors changed by `st.py CMD ARGS`
model() {
  local dir="$1" ck="$2"
  shift 2
  mkdir -p "$dir"
  cp "$ck"/*.json "$dir/"
  python3 st.py "$1" "$ck/model.safetensors" "$dir/model.safetensors" "${@:2}"
}

# the sha256 of every file under a directory (links as their targets' names)
sums() { (cd "$1" && find . -type f -exec sha256sum {} + | sort && find . -type l -printf '%p -> %l\n' | sort); }

G=(--preset tiny -t 1 -q --max-length 32 -B 4)

@test "31.1: a NaN or infinite weight is refused at load (exit 3, the tensor named); scores that overflow while decoding are exit 1; never a signal" {
  model "$T/nan" mt/latest f32 tgt_emb.weight 5 1 nan
  row 3 "*'$T/nan/model.safetensors': tensor 'tgt_emb.weight' holds NaN at index 5 of 32000*" \
    bash -c "echo 'Save the file' | translate -m '$T/nan'"
  row 3 "*tensor 'tgt_emb.weight' holds NaN*" bash -c "echo 'Save the file' | translate -m '$T/nan' -b 1"
  model "$T/inf" gpt/latest f32 ln_f.weight 3 1 inf
  for b in 1 2 4; do row 3 "*tensor 'ln_f.weight' holds +inf at index 3 of 64*" generate -m "$T/inf" -b $b -n 4 -p hi; done
  model "$T/wte" gpt/latest f32 wte.weight 100 1 -inf
  row 3 "*tensor 'wte.weight' holds -inf at index 100*" generate -m "$T/wte" --perplexity corpus.txt
  model "$T/cinf" cls/latest f32 classifier.weight 0 1 inf
  row 3 "*tensor 'classifier.weight' holds +inf*" finetune predict -m "$T/cinf" text.txt
  # one flipped bit (bit 30 of a LayerNorm weight near 1.0: about 3e38, or
  # +inf from exactly 1.0): a clear error or a result, never a signal
  model "$T/flip" gpt/latest bit ln_f.weight 3 30
  for b in 1 2 4; do
    run_split generate -m "$T/flip" -b $b -n 8 -p hi
    [ "$status" -le 1 ] || { echo "-b $b: status $status: $stderr"; false; }
    [ "$status" -eq 0 ] || [[ "$stderr" == *"decoding step "*", row "*"the model's score of token "* ]] || { echo "$stderr"; false; }
  done
  # finite weights whose products overflow: the scores are not numbers
  model "$T/big" gpt/latest f32 wte.weight 320 64 3e38
  for b in 1 2 4; do
    row 1 "*decoding step 1, row 0: the model's score of token 5 is [N+]*" generate -m "$T/big" -b $b -n 4 -p hi
  done
  row 1 "*decoding step 1*NaN*" generate -m "$T/big" --greedy -n 4 -p hi
  row 1 "*the loss of '$T/big' is NaN*" generate -m "$T/big" --perplexity corpus.txt
  [ -z "$output" ]
}

@test "31.2: a training state whose generator is all zeros is refused (exit 3, the tensor named), gpt and bert; no endless loop" {
  for arch in gpt bert; do
    cp -r $arch "$T/$arch"
    st="$T/$arch/latest/train_state.safetensors"
    for t in rng.data rng.model; do
      cp "$W/$arch/latest/train_state.safetensors" "$st"
      python3 st.py zero "$st" "$st" $t
      row 3 "*'$st': tensor '$t': the random generator's state is all zeros*" \
        timeout -k 5 60 pretrain --resume "$T/$arch" --steps 22 -t 1 -q
    done
    # Adam's moments: finite, the second never negative
    cp "$W/$arch/latest/train_state.safetensors" "$st"
    python3 st.py f32 "$st" "$st" optim.v 7 1 -1
    row 3 "*tensor 'optim.v' holds -1 at index 7*" timeout -k 5 60 pretrain --resume "$T/$arch" --steps 22 -t 1 -q
    python3 st.py f32 "$st" "$st" optim.m 3 1 nan
    row 3 "*tensor 'optim.m' holds a non-finite value at index 3*" timeout -k 5 60 pretrain --resume "$T/$arch" --steps 22 -t 1 -q
  done
}

@test "31.4: translate --attention with a translation that comes out empty (UBSan: no memcpy from NULL)" {
  model "$T/eos" mt/latest eos
  run_split translate -m "$T/eos" -b 1 --attention "$T/att.tsv" text.txt
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(printf '%s\n' "$output" | grep -c .)" -eq 0 ]   # every translation is empty
  [ "$(grep -c '^sentence' "$T/att.tsv")" -eq 20 ]
  grep -q '^</s>	' "$T/att.tsv"
}

@test "31.5: a FIFO where a model file is expected is refused (exit 3), not waited on" {
  mkdir "$T/m" && cp gpt/latest/tokenizer.json "$T/m/" && mkfifo "$T/m/model.safetensors"
  row 3 "*'$T/m/model.safetensors' is a FIFO (named pipe), not a safetensors file*" timeout -k 5 60 generate -m "$T/m" -p hi
  row 3 "*is a FIFO (named pipe)*" timeout -k 5 60 translate -m "$T/m/model.safetensors" --input-format id --output-format id text.txt
}

@test "31.6: a copy of a run resumed goes on in the copy; the original (its log included) is left as it was" {
  cd "$T"
  pretrain "${G[@]}" --steps 4 --save-every 2 --keep 0 -m A --log A.tsv "$W/train.bin" 2>/dev/null
  mkdir logs && pretrain "${G[@]}" --steps 4 --save-every 2 --keep 0 -m R --log "$T/R/train.tsv" "$W/train.bin"
  before="$(sums A; sha256sum A.tsv)"
  cp -r A B
  run_split pretrain --resume B --steps 6 -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [[ "$stderr" == *"the run was recorded in '$T/A', which still exists, and is resumed in 'B': its log '$T/A.tsv' stays the original run's"* ]] ||
    { echo "$stderr"; false; }
  [ "$(sums A; sha256sum A.tsv)" = "$before" ] || { echo "A changed"; false; }
  [ "$(readlink B/latest)" = step-00000006 ]
  # a checkpoint named directly: its run directory goes on
  cp -r A C
  run_split pretrain --resume C/step-00000004 --steps 6 -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ -d C/step-00000006 ] && [ "$(sums A; sha256sum A.tsv)" = "$before" ]
  # a log inside the run directory moves with it
  mv R R2
  run_split pretrain --resume R2 --steps 6 -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(tail -1 R2/train.tsv | cut -f1)" = 6 ] && [ ! -e R ]
  # -m given still wins; a checkpoint outside a run directory needs it
  cp -r A/step-00000004 lone
  row 2 "*'lone' is a checkpoint outside a run directory: give -m DIR*" pretrain --resume lone --steps 6 -t 1 -q
  run_split pretrain --resume lone --steps 6 -t 1 -q -m E
  [ "$status" -eq 0 ] && [ -d E/step-00000006 ] && [ "$(sums A; sha256sum A.tsv)" = "$before" ]
}

@test "31.7: a new run into a directory holding another run is refused (exit 1); --force writes it, and --keep/--average touch only its own checkpoints" {
  cd "$T"
  pretrain "${G[@]}" --steps 4 --save-every 4 -m g "$W/train.bin"
  before="$(sums g)"
  row 1 "*'g' holds another run or other files (*'step-00000004'*): give another -m DIR, --resume g to continue the run that is there, or --force*" \
    pretrain "${G[@]}" --steps 2 -m g "$W/train.bin"
  row 1 "*'g' holds another run*" pretrain "${G[@]}" --steps 2 --init g -m g "$W/train.bin"
  [ "$(sums g)" = "$before" ]
  cp -r "$W/bert" bert
  before="$(sums bert)"
  row 1 "*'bert' holds another run*" finetune -t 1 -q -B 16 --max-length 48 --init bert --epochs 1 -m bert "$W/cls.tsv"
  [ "$(sums bert)" = "$before" ]
  mkdir notes && echo mine >notes/todo.txt
  row 1 "*'notes' holds another run or other files ('todo.txt')*" pretrain "${G[@]}" --steps 2 -m notes "$W/train.bin"
  # forced: steps 1-3 beside the other run's step 4; --keep 2 prunes only its own
  # step 1, --average 2 averages its own 2 and 3 (not the other run's newer 4)
  run_split pretrain "${G[@]}" --steps 3 --save-every 1 --keep 2 --average 2 -m g --force "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(ls g | tr '\n' ' ')" = "average latest step-00000002 step-00000003 step-00000004 " ] || { ls g; false; }
  python3 - g <<'PY'
import json, struct, sys
from array import array
def tensors(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: array('f', b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]])
            for k, v in h.items() if k != '__metadata__'}
d = sys.argv[1]
a, s2, s3 = (tensors('%s/%s/model.safetensors' % (d, x)) for x in ('average', 'step-00000002', 'step-00000003'))
for k in a:   # the mean of the run's own two, in double, rounded to float
    want = array('f', [(x + y) / 2 for x, y in zip(s2[k], s3[k])])
    assert a[k] == want, k
PY
  # a killed run's leftovers that no run owns (best without a checkpoint) do not count
  mkdir k && cp -r g/average k/best
  run_split pretrain "${G[@]}" --steps 2 -m k "$W/train.bin"
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "31.8: a second run on a run directory in use exits 1 naming the first one's process" {
  cd "$T"
  pretrain "${G[@]}" --steps 100000 --save-every 100000 -m r "$W/train.bin" 2>/dev/null &
  pid=$! BG=$!
  for _ in $(seq 3000); do [ -e r/.lock ] && break; sleep 0.01; done
  row 1 "*'r' is in use by another run (process $pid, which holds 'r/.lock')*" pretrain "${G[@]}" --steps 2 -m r --force "$W/train.bin"
  row 1 "*'r' is in use by another run (process $pid*" finetune -t 1 -q -B 16 --max-length 48 --init "$W/bert" --epochs 1 \
    -m r --force "$W/cls.tsv"
  kill -TERM $pid
  rc=0; wait $pid || rc=$?
  [ "$rc" -eq 143 ]
  [ ! -e r/.lock ] && [ "$(readlink r/latest)" != "" ]
  # the lock is released at the end: the run goes on
  run_split pretrain --resume r --steps "$(( $(readlink r/latest | sed 's/step-0*//') + 1 ))" -t 1 -q
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ -z "$(ls -A r | grep '^\.')" ]
}

@test "31.9: an output that is one of the inputs is refused (exit 2), the input left as it was" {
  cp train.bin "$T/t.bin" && cp text.txt "$T/dev.en" && cp cls.tsv "$T/c.tsv"
  a="$(sha256sum "$T/t.bin" "$T/dev.en" "$T/c.tsv")"
  row 2 "*--log '$T/t.bin' is also an input ('$T/t.bin'): writing it would replace it*" \
    pretrain "${G[@]}" --steps 2 -m "$O" --log "$T/t.bin" "$T/t.bin"
  row 2 "*--log 'tok.json' is also an input*" pretrain "${G[@]}" --steps 2 -m "$O" --log tok.json --tokenizer tok.json corpus.txt
  row 2 "*--attention '$T/dev.en' is also an input ('$T/dev.en')*" translate -m mt -b 1 --attention "$T/dev.en" "$T/dev.en"
  row 2 "*--log '$T/c.tsv' is also an input*" finetune -t 1 -q --init bert --epochs 1 -m "$O" --log "$T/c.tsv" "$T/c.tsv"
  [ "$(sha256sum "$T/t.bin" "$T/dev.en" "$T/c.tsv")" = "$a" ]
  [ ! -e "$O" ]
}

@test "31.11: a configuration asking for an absurd position table is refused before it is made (exit 3)" {
  model "$T/pos" mt/latest yaml max-positions 16777216
  # a 4 GiB table would not fit under the limit: exit 1 (out of memory) if it were made
  if [ -z "${NLPIPE_ASAN:-}" ]; then ul=(bash -c 'ulimit -v 1000000 && exec "$@"' _); else ul=(); fi
  row 3 "*'$T/pos/model.safetensors': max-positions 16777216 asks for a position table of 4096 MiB*" \
    "${ul[@]}" translate -m "$T/pos" text.txt
  # sizes that disagree with the tensors are exit 3 too
  model "$T/dm" gpt/latest yaml d-model 128
  row 3 "*'$T/dm/model.safetensors'*shape*" generate -m "$T/dm" -p hi
}

@test "31.12: option values out of range and options that exclude each other are usage errors; a smaller tokenizer is kept to its ids" {
  for a in "-B -1" "--max-length -1" "--eps -1" "--grad-clip -1" "--lr -1" "--eps 0" "--batch-size 0"; do
    # shellcheck disable=SC2086
    row 2 "*invalid value for ${a% *}: * is out of range (*, or auto)*" pretrain "${G[@]}" $a --steps 2 -m "$O" train.bin
  done
  row 2 "*--top-p: 0 is out of range*" generate -m gpt --top-p 0 -p hi
  row 2 "*--max-length: 0 is out of range (2 to *, or auto)*" generate -m gpt --perplexity --max-length 0 corpus.txt
  row 2 "*--max-length is for --perplexity*" generate -m gpt --max-length 8 -p hi
  row 2 "*--n-best: 0 is out of range (1 to 256, or auto)*" translate -m mt --n-best 0 text.txt
  row 2 "*--greedy takes the most probable token; it does not sample*" generate -m gpt --greedy --temperature 1.0 -p hi
  row 2 "*--greedy takes the most probable token*" generate -m gpt --greedy --top-k 5 -p hi
  row 0 "" generate -m gpt --greedy --temperature 0 -n 2 -p hi
  row 2 "*--from-scratch starts new weights; --resume continues*" finetune --from-scratch --resume cls -t 1 -q cls.tsv
  row 2 "*--epochs: the training options are for training, not predict*" finetune predict --epochs 3 -m cls text.txt
  row 2 "*--lr: the training options are for training, not eval*" finetune eval --lr 0.1 -m cls cls.tsv
  # a resumed run.yaml with such values: exit 3 naming the file and line
  for kv in "lr: -1" "max-length: 0" "batch-size: -1" "eps: 0"; do
    rm -rf "$T/r" && cp -r gpt "$T/r"
    y="$T/r/latest/run.yaml"
    sed -i "s/^${kv%%:*}: .*/$kv/" "$y"
    n="$(grep -n "^${kv%%:*}:" "$y" | cut -d: -f1)"
    row 3 "*'$y' line $n: invalid value for '${kv%%:*}'*out of range*" pretrain --resume "$T/r" --steps 4 -t 1 -q
  done
  # a tokenizer with fewer ids than the model (a padded vocabulary): only its ids come out
  run_split generate -m gpt --tokenizer tok300.json -p Die -n 64 --ignore-eos --output-format id --seed 3
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
  [ "$(printf '%s\n' $output | sort -n | tail -1)" -lt 300 ]
  run_split generate -m gpt --tokenizer tok300.json -p Die -n 64 --ignore-eos --seed 3
  [ "$status" -eq 0 ] || { echo "$stderr"; false; }
}

@test "31.13: exit codes: bad values in config files and run.yaml are 3 naming file and line; corrupt metadata and states 3; eval of nothing 1" {
  for kv in "dropout: 2" "heads: 3" "d-model: 0"; do
    printf 'steps: 2\n%s\n' "$kv" >"$T/c.yaml"
    row 3 "*'$T/c.yaml' line 2: *" pretrain "${G[@]}" -c "$T/c.yaml" -m "$O" train.bin
  done
  row 2 "*d-model 64 is not divisible by heads 3*" pretrain "${G[@]}" --heads 3 --steps 2 -m "$O" train.bin
  rm -rf "$T/r" && cp -r gpt "$T/r" && sed -i 's/^dropout: .*/dropout: 2/' "$T/r/latest/run.yaml"
  row 3 "*'$T/r/latest/run.yaml' line *: 'dropout' must be in [[]0, 1), got 2*" pretrain --resume "$T/r" --steps 4 -t 1 -q
  sed -i 's/^dropout: .*/dropout: lots/' "$T/r/latest/run.yaml"
  row 3 "*'$T/r/latest/run.yaml' line *: 'dropout' expects a number, got 'lots'*" pretrain --resume "$T/r" --steps 4 -t 1 -q
  # classifier metadata: an input length no classifier has
  for n in 1 2 3; do
    rm -rf "$T/c" && cp -r cls "$T/c"
    f="$(readlink -f "$T/c/latest")/model.safetensors"
    python3 st.py meta "$f" "$f" input_length $n
    rm -rf "$T/c/best"
    row 3 "*input_length $n is no classifier's*" finetune predict -m "$T/c" text.txt
  done
  # a training state that is a directory
  rm -rf "$T/r" && cp -r gpt "$T/r" && rm "$T/r/latest/train_state.safetensors" && mkdir "$T/r/latest/train_state.safetensors"
  row 3 "*train_state.safetensors' is a directory, not a safetensors file*" pretrain --resume "$T/r" --steps 4 -t 1 -q
  : >"$T/empty.tsv"
  row 1 "*'$T/empty.tsv' holds no examples: nothing to evaluate*" finetune eval -m cls "$T/empty.tsv"
  [ -z "$output" ]
}
