#!/usr/bin/python3
"""Write a random-weight GGUF of the LLaMA block (arch "llama") for llama.cpp,
the generation peer of `make bench` (tools/bench/gen.sh, smollm_135m_gen).

usage: make_llama_gguf.py OUT.gguf [--layers 30 --embd 576 --heads 9 --kv-heads 3 --ff 1536
                                    --vocab 49152 --ctx 2048 --theta 10000 --eps 1e-5] [--ftype f32|f16]

Defaults: SmolLM-135M's shape (genbench's smollm_135m). Weights N(0, 0.02), RMSNorm
weights 1, output tied (written as a copy of token_embd, as convert_hf_to_gguf does).
Tokenizer: GPT-2's byte-level BPE from shared/vectors/tokenize/gpt2 cut to --vocab
(SmolLM's tokenizer is a GPT-2-style BPE of 49152 tokens); only its size matters here.
The q/k rows are random, so llama.cpp's own rope layout needs no permutation.
GGUF_PY: the gguf-py folder of a llama.cpp tree (see shared/peers/llamacpp/README.md);
SHARED: ../shared by default.
"""
import argparse, json, os, sys
import numpy as np
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("GGUF_PY", os.path.join(here, "src", "gguf-py")))
import gguf  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--layers", type=int, default=30)
ap.add_argument("--embd", type=int, default=576)
ap.add_argument("--heads", type=int, default=9)
ap.add_argument("--kv-heads", type=int, default=3)
ap.add_argument("--ff", type=int, default=1536)
ap.add_argument("--vocab", type=int, default=49152)
ap.add_argument("--ctx", type=int, default=2048)
ap.add_argument("--theta", type=float, default=10000.0)
ap.add_argument("--eps", type=float, default=1e-5)
ap.add_argument("--ftype", default="f32", choices=["f32", "f16"])
ap.add_argument("--name", default="smollm-135m-random")
a = ap.parse_args()

L, C, H, G, F, V = a.layers, a.embd, a.heads, a.kv_heads, a.ff, a.vocab
D = C // H
rng = np.random.default_rng(0)


def normal(shape, std=0.02):
    return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)


def mat(x):  # 2-D weights in the chosen type; 1-D norms always f32
    return x.astype(np.float16) if a.ftype == "f16" else x


w = gguf.GGUFWriter(a.out, "llama")
w.add_name(a.name)
w.add_block_count(L)
w.add_context_length(a.ctx)
w.add_embedding_length(C)
w.add_feed_forward_length(F)
w.add_head_count(H)
w.add_head_count_kv(G)
w.add_rope_dimension_count(D)
w.add_rope_freq_base(a.theta)
w.add_layer_norm_rms_eps(a.eps)
w.add_vocab_size(V)
w.add_file_type(gguf.LlamaFileType.ALL_F32 if a.ftype == "f32" else gguf.LlamaFileType.MOSTLY_F16)

shared = os.environ.get("SHARED", os.path.join(here, "..", "..", "..", "shared"))
d = os.path.join(shared, "vectors", "tokenize", "gpt2")
enc = json.load(open(f"{d}/encoder.json", encoding="utf-8"))
id2tok = {i: t for t, i in enc.items()}
toks = [id2tok[i] for i in range(len(id2tok))]
merges = [ln for ln in open(f"{d}/vocab.bpe", encoding="utf-8").read().split("\n")[1:] if ln]
eot = "<|endoftext|>"
if V < len(toks):
    toks = toks[:V - 1] + [eot]
    merges = merges[:V - 1 - 256]
w.add_tokenizer_model("gpt2")
w.add_tokenizer_pre("gpt-2")
w.add_token_list(toks)
w.add_token_types([gguf.TokenType.CONTROL if t == eot else gguf.TokenType.NORMAL for t in toks])
w.add_token_merges(merges)
w.add_bos_token_id(V - 1)
w.add_eos_token_id(V - 1)

emb = normal((V, C))
w.add_tensor("token_embd.weight", mat(emb))
w.add_tensor("output_norm.weight", np.ones(C, np.float32))
w.add_tensor("output.weight", mat(emb.copy()))
for i in range(L):  # numpy shape = reversed ggml ne: [out, in]
    p = f"blk.{i}."
    w.add_tensor(p + "attn_norm.weight", np.ones(C, np.float32))
    w.add_tensor(p + "attn_q.weight", mat(normal((C, C))))
    w.add_tensor(p + "attn_k.weight", mat(normal((G * D, C))))
    w.add_tensor(p + "attn_v.weight", mat(normal((G * D, C))))
    w.add_tensor(p + "attn_output.weight", mat(normal((C, C))))
    w.add_tensor(p + "ffn_norm.weight", np.ones(C, np.float32))
    w.add_tensor(p + "ffn_gate.weight", mat(normal((F, C))))
    w.add_tensor(p + "ffn_up.weight", mat(normal((F, C))))
    w.add_tensor(p + "ffn_down.weight", mat(normal((C, F))))

w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", a.out)
