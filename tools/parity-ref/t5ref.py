"""A T5-style encoder-decoder written from the T5 paper (Raffel et al. 2020,
§2.1 and §3.1; v1.1's gated GELU from Shazeer 2020, "GLU Variants Improve
Transformer"), in nlpipe's conventions where T5 leaves them open, for the
parity set tests/data/parity/encdec_t5 (tools/parity-t5 writes it):

  - relative position bias: one learned scalar per head and bucket of the key
    offset j - i, buckets as the paper describes (exact for small offsets,
    logarithmic up to a maximum distance, one bucket beyond it), bidirectional
    in the encoder, causal in the decoder's self-attention, none in
    cross-attention; one table per stack, shared by its layers; no absolute
    positions;
  - RMSNorm before each sublayer and at each stack's end (scale only, no mean
    subtracted), residual x + f(norm(x)); no biases in the linear layers;
  - feed-forward fc2(gelu_tanh(gate x) * up x);
  - nlpipe's choices: embeddings times sqrt(d) (T5 does not scale them),
    scores q.k / sqrt(D) + bias (T5 folds the scale into its init), output
    tied to the shared embedding without rescaling, label-smoothed
    cross-entropy (uniform, eps 0.1) averaged over non-pad targets.

Parameter names are nlpipe's (encoder.rel_bias.weight [buckets, heads], ...
ffn.gate / ffn.up / ffn.fc2, ln1 / ln2 / ln3, ln_f). Only torch.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class T5Config:
    src_vocab: int = 64
    tgt_vocab: int = 64
    shared_vocab: bool = True
    tie_output: bool = True
    d_model: int = 32
    n_heads: int = 4
    d_ff: int = 48
    n_enc: int = 2
    n_dec: int = 2
    max_len: int = 32
    pre_ln: bool = True
    pos: str = "relative"
    relative_buckets: int = 8
    relative_max_distance: int = 12
    norm: str = "rms"
    bias: bool = False
    ffn: str = "gated-gelu"
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    label_smoothing: float = 0.1
    smoothing_mode: str = "uniform"
    ln_eps: float = 1e-6
    dropout: float = 0.0


def bucket(rel, bidirectional, n, max_distance):
    """The paper's bucket of key offset rel = j - i (a LongTensor)."""
    d = -rel  # how far back the key is
    ret = torch.zeros_like(d)
    if bidirectional:
        n //= 2
        ret = ret + (d < 0).long() * n
        d = d.abs()
    else:
        d = d.clamp(min=0)
    exact = n // 2
    far = exact + (torch.log(d.double().clamp(min=1) / exact) / math.log(max_distance / exact) * (n - exact)).long()
    far = far.clamp(max=n - 1)
    return ret + torch.where(d < exact, d, far)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.h = c.n_heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(c.d_model, c.d_model, bias=False)
                                                              for _ in range(4))

    def forward(self, x, mem, key_ok, bias=None):
        B, T, C = x.shape
        S = mem.shape[1]
        D = C // self.h
        q = self.q_proj(x).view(B, T, self.h, D).transpose(1, 2)
        k = self.k_proj(mem).view(B, S, self.h, D).transpose(1, 2)
        v = self.v_proj(mem).view(B, S, self.h, D).transpose(1, 2)
        a = q @ k.transpose(-1, -2) / math.sqrt(D)
        if bias is not None:
            a = a + bias[None]
        a = a.masked_fill(~key_ok, torch.finfo(a.dtype).min)
        return self.o_proj((a.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))


class FFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.fc2 = nn.Linear(c.d_ff, c.d_model, bias=False)

    def forward(self, x):
        return self.fc2(F.gelu(self.gate(x), approximate="tanh") * self.up(x))


class EncLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn, self.ln1, self.ffn, self.ln2 = Attention(c), RMSNorm(c.d_model, c.ln_eps), FFN(c), \
            RMSNorm(c.d_model, c.ln_eps)


class DecLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn, self.ln1 = Attention(c), RMSNorm(c.d_model, c.ln_eps)
        self.cross_attn, self.ln2 = Attention(c), RMSNorm(c.d_model, c.ln_eps)
        self.ffn, self.ln3 = FFN(c), RMSNorm(c.d_model, c.ln_eps)


class Stack(nn.Module):
    def __init__(self, c, layer, n):
        super().__init__()
        self.rel_bias = nn.Embedding(c.relative_buckets, c.n_heads)
        self.layers = nn.ModuleList(layer(c) for _ in range(n))
        self.ln_f = RMSNorm(c.d_model, c.ln_eps)


class T5(nn.Module):
    def __init__(self, c: T5Config):
        super().__init__()
        self.c = c
        self.tgt_emb = nn.Embedding(c.tgt_vocab, c.d_model)
        self.encoder = Stack(c, EncLayer, c.n_enc)
        self.decoder = Stack(c, DecLayer, c.n_dec)

    def position_bias(self, stack, Tq, Tk, bidirectional, q0=0):
        i = torch.arange(q0, q0 + Tq)[:, None]
        j = torch.arange(Tk)[None, :]
        b = bucket(j - i, bidirectional, self.c.relative_buckets, self.c.relative_max_distance)
        return stack.rel_bias(b).permute(2, 0, 1)  # [H, Tq, Tk]

    def encode(self, src):
        c = self.c
        S = src.shape[1]
        ok = (src != c.pad_id)[:, None, None, :]
        x = self.tgt_emb(src) * math.sqrt(c.d_model)
        bias = self.position_bias(self.encoder, S, S, True)
        for L in self.encoder.layers:
            h = L.ln1(x)
            x = x + L.self_attn(h, h, ok, bias)
            x = x + L.ffn(L.ln2(x))
        return self.encoder.ln_f(x), ok

    def decode(self, tgt_in, mem, src_ok):
        c = self.c
        T = tgt_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        ok = (tgt_in != c.pad_id)[:, None, None, :] & causal[None, None]
        y = self.tgt_emb(tgt_in) * math.sqrt(c.d_model)
        bias = self.position_bias(self.decoder, T, T, False)
        for L in self.decoder.layers:
            h = L.ln1(y)
            y = y + L.self_attn(h, h, ok, bias)
            y = y + L.cross_attn(L.ln2(y), mem, src_ok)
            y = y + L.ffn(L.ln3(y))
        return self.decoder.ln_f(y) @ self.tgt_emb.weight.t()

    def forward(self, src, tgt_in, tgt_out):
        c = self.c
        mem, src_ok = self.encode(src)
        logits = self.decode(tgt_in, mem, src_ok)
        V = logits.shape[-1]
        lp = logits.reshape(-1, V).log_softmax(-1)
        t = tgt_out.reshape(-1)
        keep = t != c.pad_id
        nll = -lp[keep].gather(1, t[keep][:, None]).squeeze(1)
        smooth = -lp[keep].mean(-1)
        loss = ((1 - c.label_smoothing) * nll + c.label_smoothing * smooth).mean()
        return logits, loss, nll.mean()


def init_(model, gen_std=0.3):
    """Matrices and embeddings N(0, gen_std); relative tables N(0, 1); norms 1."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "rel_bias" in n:
                p.normal_(0, 1.0)
            elif ".ln" in n:
                p.fill_(1.0)
            else:
                p.normal_(0, gen_std)
