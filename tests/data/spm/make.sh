#!/usr/bin/env bash
# tests/data/spm/make.sh — remakes the small sentencepiece models of this
# directory and their reference outputs, with Debian's sentencepiece 0.1.97
# (apt-get install sentencepiece). Committed: run it only to change them.
#
# Models (trained on tools/demo-data: lm-train.txt, src.en, tgt.de):
#   uni-nfkc      unigram, nmt_nfkc, 1,000 pieces (the default normalization)
#   uni-id-bf     unigram, identity, byte fallback, 1,000
#   bpe-id-bf     bpe, identity, byte fallback, 1,000
#   bpe-rules     bpe, 400, the rules of rules.tsv as its character map (a
#                 small Darts array: overlapping keys, expansion, deletion),
#                 user-defined <sep> foo ab, control <ctl>, no
#                 remove_extra_whitespaces, no dummy prefix
#   uni-rules     unigram, 400, rules.tsv, whitespace as suffix,
#                 user-defined <sep> and the, control <ctl>
#   char-id       char, identity (98 pieces: the characters seen);  word-id  word, identity, 600
#   den-id        unigram, identity, 300, with denorm.tsv as its denormalizer
#                 (decoded text: a -> A, _ -> -)
# References for each model M, for input.txt (demo data not trained on,
# then stress lines: white space, controls, user-defined and control
# symbols' text, U+2581, combining marks, CJK, emoji, ill-formed UTF-8):
#   M.ids M.pieces   spm_encode --output_format=id / piece
#   M.dec            spm_decode of M.ids
#   M.rand.dec       spm_decode of rand.ids (random id sequences below 98)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
cd "$here"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
D="$top/tools/demo-data"
cat "$D/lm-train.txt" "$D/src.en" "$D/tgt.de" >"$tmp/corpus"
t() { spm_train --input="$tmp/corpus" --num_threads=1 --model_prefix="$tmp/$1" "${@:2}" >"$tmp/$1.log" 2>&1; cp "$tmp/$1.model" .; }
t uni-nfkc --model_type=unigram --vocab_size=1000
t uni-id-bf --model_type=unigram --vocab_size=1000 --normalization_rule_name=identity --byte_fallback
t bpe-id-bf --model_type=bpe --vocab_size=1000 --normalization_rule_name=identity --byte_fallback
t bpe-rules --model_type=bpe --vocab_size=400 --normalization_rule_tsv=rules.tsv --user_defined_symbols='<sep>,foo,ab' \
  --control_symbols='<ctl>' --remove_extra_whitespaces=false --add_dummy_prefix=false
t uni-rules --model_type=unigram --vocab_size=400 --normalization_rule_tsv=rules.tsv --treat_whitespace_as_suffix=true \
  --user_defined_symbols='<sep>,the' --control_symbols='<ctl>'
t char-id --model_type=char --vocab_size=150 --normalization_rule_name=identity
t word-id --model_type=word --vocab_size=600 --normalization_rule_name=identity
t den-id --model_type=unigram --vocab_size=300 --normalization_rule_name=identity --denormalization_rule_tsv=denorm.tsv

# input.txt: 120 lines of demo data not in the corpus, then the stress lines
python3 - "$D/lm-valid.txt" "$D/ende-dev.tsv" >input.txt <<'PY'
import random, sys
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')[:40]
for l in open(sys.argv[2], encoding='utf-8').read().split('\n')[:40]:
    lines += l.split('\t')
r = random.Random(27)
pool = list("abcdefghijklmnoABCXYZ0123456789.,;:!?'\"()-") + [
    " ", " ", "  ", "   ", "\t", "\u3000", "\u00a0", "\u2581", "the", "ab", "foo", "<sep>", "<s>", "</s>", "<unk>",
    "<ctl>", "<0x41>", "\u00e9", "e\u0301", "\ufb01", "\uff21", "\u2460", "\u00df", "\u00c4", "\u00f6", "\u9f8d",
    "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\U0001F600", "\U0001F44D\U0001F3FD", "\u200b", "\u00ad", "\x01",
    "\x7f", "\u2122", "\u2026", "\u00bd", "\uff76\uff9e", "\ufeff", "\U0001F1E9\U0001F1EA", "\u03a9", "\u0300", "ABC",
    "AB", "123", "\r"]
for i in range(200):
    lines.append(''.join(r.choice(pool) for _ in range(r.randint(0, 18))))
lines += ["", " ", "   ", "\t", "\u2581", "\u2581\u2581", " \u2581 ", "a  b", " a", "a ", "<0x41>"]
sys.stdout.write('\n'.join(lines) + '\n')
PY
printf 'x\xffy \xe2\x96 z\n\xc3\n\xed\xa0\x80 end\n\xf0\x9f\x98 \x80\x80\n' >>input.txt

# rand.ids: 100 random sequences of ids below 98 (char-id has 98 pieces)
python3 - >rand.ids <<'PY'
import random
r = random.Random(7)
for i in range(100):
    print(' '.join(str(r.randrange(98)) for _ in range(r.randint(0, 12))))
PY
for m in uni-nfkc uni-id-bf bpe-id-bf bpe-rules uni-rules char-id word-id den-id; do
  spm_encode --model=$m.model --output_format=id <input.txt >$m.ids
  spm_encode --model=$m.model --output_format=piece <input.txt >$m.pieces
  spm_decode --model=$m.model --input_format=id <$m.ids >$m.dec
  spm_decode --model=$m.model --input_format=id <rand.ids >$m.rand.dec
done
ls -la

# tokenizer.json forms, written by hand from tools/tokconv --hf-only's
# vocabulary and merges (needs the built tree), in the shapes HF's
# converters gave popular models, and HF tokenizers' ids and decoding of
# them (needs node and tokenizers@0.23.2, ../../../../shared/peers/README.md):
#   bpe-id-bf.llama.json   LLaMA's: Prepend + Replace normalizer, no
#                          pre-tokenizer, BPE byte_fallback fuse_unk,
#                          Replace/ByteFallback/Fuse/Strip decoder
#   uni-id-bf.first.json   Metaspace prepend_scheme first, split false;
#                          Unigram byte_fallback; Metaspace decoder
#   uni-rules.t5.json      T5's (older converter): Precompiled + Replace(Regex
#                          " {2,}", " "), WhitespaceSplit + Metaspace
#                          (add_prefix_space true), Unigram
# References: F.hf.ids (ids of input.txt), F.hf.dec (decoding of F.hf.ids,
# each text ended by a NUL byte).
"$top/tools/tokconv" --hf-only bpe-id-bf.model "$tmp/bpe.json"
"$top/tools/tokconv" --hf-only uni-id-bf.model "$tmp/uni.json"
"$top/tools/tokconv" --hf-only uni-rules.model "$tmp/rules.json"
python3 - "$tmp" <<'PY'
import json, sys
t = sys.argv[1]
def load(n): return json.load(open(t + '/' + n, encoding='utf-8'))
def save(j, n): open(n, 'w', encoding='utf-8').write(json.dumps(j, ensure_ascii=False, indent=1) + '\n')
sp = lambda c: {'id': 0, 'content': c, 'single_word': False, 'lstrip': False, 'rstrip': False, 'normalized': False, 'special': True}
j = load('bpe.json')
ids = {k: v for k, v in j['model']['vocab'].items()}
j['added_tokens'] = [dict(sp(c), id=ids[c]) for c in ('<unk>', '<s>', '</s>')]
j['normalizer'] = {'type': 'Sequence', 'normalizers': [{'type': 'Prepend', 'prepend': '\u2581'},
                   {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '\u2581'}]}
j['pre_tokenizer'] = None
j['decoder'] = {'type': 'Sequence', 'decoders': [{'type': 'Replace', 'pattern': {'String': '\u2581'}, 'content': ' '},
                {'type': 'ByteFallback'}, {'type': 'Fuse'}, {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}]}
save(j, 'bpe-id-bf.llama.json')
j = load('uni.json')
j['normalizer'] = None
j['pre_tokenizer'] = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': False}
j['decoder'] = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': False}
save(j, 'uni-id-bf.first.json')
j = load('rules.json')
j['normalizer']['normalizers'] = [j['normalizer']['normalizers'][0],
                                  {'type': 'Replace', 'pattern': {'Regex': ' {2,}'}, 'content': ' '}]
j['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [{'type': 'WhitespaceSplit'},
                      {'type': 'Metaspace', 'replacement': '\u2581', 'add_prefix_space': True}]}
j['decoder'] = {'type': 'Metaspace', 'replacement': '\u2581', 'add_prefix_space': True}
save(j, 'uni-rules.t5.json')
PY
for f in bpe-id-bf.llama uni-id-bf.first uni-rules.t5; do
  node "$top/../shared/peers/tok/hf-encode.js" $f.json input.txt $f.hf.ids
  node hf-decode.js $f.json $f.hf.ids >$f.hf.dec
done
ls -la *.json *.hf.*
