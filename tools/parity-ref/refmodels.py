"""PyTorch reference for rotary positions and the LLaMA block, written from
the papers, for checking nlpipe numerically (tools/parity-llama).

  RoFormer (Su et al. 2021, eq. 13-15): a query or key x at position p is
  turned pair by pair: pair i by the angle p * theta^(-2i/D). The pairs are
  (x[2i], x[2i+1]) in the paper ("interleaved", as GPT-J) or (x[i], x[i+D/2])
  ("half", GPT-NeoX and HF's LLaMA). Angles are computed in fp32 the way
  HF computes them: inv_freq = 1 / theta**(arange(0, D, 2)/D), angle =
  position * inv_freq, then cos and sin, each rounded to fp32.
  LLaMA (Touvron et al. 2023, section 2.2): pre-normalisation with RMSNorm
  (Zhang & Sennrich 2019: x / sqrt(mean(x^2) + eps) * g), the SwiGLU
  feed-forward of Shazeer 2020 (down(silu(gate(x)) * up(x)), no biases) and
  rotary positions on every layer's queries and keys.
  Grouped-query attention (Ainslie et al. 2023): H query heads share G key
  and value heads, query head h reading key/value head h // (H/G).

Two models:
  GPTRope  GPT-2's block (pre-LN LayerNorm, fused Conv1D c_attn, GELU-tanh
           MLP, tied output, names without "transformer.") with rotary
           positions instead of wpe and G key/value heads (c_attn [C, C+2GD]).
  Llama    the LLaMA block with HF LlamaForCausalLM's tensor names
           (model.embed_tokens, model.layers.N.{input_layernorm,
           self_attn.{q,k,v,o}_proj, post_attention_layernorm,
           mlp.{gate,up,down}_proj}, model.norm, lm_head unless tied).
Both: causal attention with finfo.min masking, loss = mean CE of
logits[:, :-1] against labels[:, 1:] (ignore -100), no dropout, a KV cache
for greedy decoding. Only torch; fp32 (or fp64 with .double()).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rope_cos_sin(p0, T, D, theta, dtype=torch.float32):
    """cos and sin [T, D/2] of positions p0..p0+T-1 (fp32 angles, as HF)."""
    inv = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    ang = torch.arange(p0, p0 + T, dtype=torch.float32)[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rope(x, cos, sin, layout):
    """x [B, H, T, D] turned at the positions of cos/sin [T, D/2]."""
    D = x.shape[-1]
    if layout == "half":
        a, b = x[..., : D // 2], x[..., D // 2:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def attention(q, k, v, past):
    """q [B,H,T,D], k/v [B,G,T,D] (G divides H), past (k, v) of earlier
    positions or None; causal over absolute positions. Returns [B,T,H*D] and
    the new (k, v)."""
    if past is not None:
        k = torch.cat([past[0], k], dim=2)
        v = torch.cat([past[1], v], dim=2)
    B, H, T, D = q.shape
    S, rep = k.shape[2], H // k.shape[1]
    kk, vv = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    att = (q @ kk.transpose(-1, -2)) / math.sqrt(D)
    causal = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)
    att = att.masked_fill(~causal, torch.finfo(att.dtype).min)
    y = F.softmax(att, dim=-1) @ vv
    return y.transpose(1, 2).reshape(B, T, H * D), (k, v)


def lm_loss(logits, labels):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


# --- GPT-2's block with rotary positions


class Conv1D(nn.Module):
    def __init__(self, nin, nout):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nin, nout))
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        return x @ self.weight + self.bias


class GPTRopeAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.D = c["n_embd"] // c["n_head"]
        self.G = c.get("n_kv_head", c["n_head"])
        self.c_attn = Conv1D(c["n_embd"], c["n_embd"] + 2 * self.G * self.D)
        self.c_proj = Conv1D(c["n_embd"], c["n_embd"])

    def forward(self, x, cos, sin, past):
        B, T, C = x.shape
        H, G, D = self.c["n_head"], self.G, self.D
        q, k, v = self.c_attn(x).split([C, G * D, G * D], dim=2)
        q = q.view(B, T, H, D).transpose(1, 2)
        k = k.view(B, T, G, D).transpose(1, 2)
        v = v.view(B, T, G, D).transpose(1, 2)
        q, k = rope(q, cos, sin, self.c["rope_layout"]), rope(k, cos, sin, self.c["rope_layout"])
        y, present = attention(q, k, v, past)
        return self.c_proj(y), present


class GPTRopeBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        C = c["n_embd"]
        self.ln_1 = nn.LayerNorm(C, eps=c["layer_norm_epsilon"])
        self.attn = GPTRopeAttention(c)
        self.ln_2 = nn.LayerNorm(C, eps=c["layer_norm_epsilon"])
        self.mlp = nn.Module()
        self.mlp.c_fc = Conv1D(C, 4 * C)
        self.mlp.c_proj = Conv1D(4 * C, C)

    def forward(self, x, cos, sin, past):
        a, present = self.attn(self.ln_1(x), cos, sin, past)
        x = x + a
        return x + self.mlp.c_proj(gelu_tanh(self.mlp.c_fc(self.ln_2(x)))), present


class GPTRope(nn.Module):
    kind = "gpt"

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.h = nn.ModuleList([GPTRopeBlock(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c["layer_norm_epsilon"])
        for name, p in self.named_parameters():  # HF GPT-2's init
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            elif name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c["n_layer"]))
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, ids, labels=None, past=None):
        p0 = 0 if past is None else past[0][0].shape[2]
        cos, sin = rope_cos_sin(p0, ids.shape[1], self.c["n_embd"] // self.c["n_head"], self.c["rope_theta"],
                                self.wte.weight.dtype)
        x, presents = self.wte(ids), []
        for i, blk in enumerate(self.h):
            x, pr = blk(x, cos, sin, None if past is None else past[i])
            presents.append(pr)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return logits, None if labels is None else lm_loss(logits, labels), presents


# --- LLaMA


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, H = c["hidden_size"], c["num_attention_heads"]
        self.H, self.G, self.D, self.theta = H, c["num_key_value_heads"], C // H, c["rope_theta"]
        self.q_proj = nn.Linear(C, C, bias=False)
        self.k_proj = nn.Linear(C, self.G * self.D, bias=False)
        self.v_proj = nn.Linear(C, self.G * self.D, bias=False)
        self.o_proj = nn.Linear(C, C, bias=False)

    def forward(self, x, cos, sin, past):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.G, self.D).transpose(1, 2)
        y, present = attention(rope(q, cos, sin, "half"), rope(k, cos, sin, "half"), v, past)
        return self.o_proj(y), present


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, Fd = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(C, Fd, bias=False)
        self.up_proj = nn.Linear(C, Fd, bias=False)
        self.down_proj = nn.Linear(Fd, C, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = LlamaAttention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = LlamaMLP(c)

    def forward(self, x, cos, sin, past):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, past)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), present


class Llama(nn.Module):
    kind = "llama"

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.model.layers = nn.ModuleList([LlamaLayer(c) for _ in range(c["num_hidden_layers"])])
        self.model.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        if not c["tie_word_embeddings"]:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        for name, p in self.named_parameters():  # HF LlamaPreTrainedModel's init
            if not name.endswith("norm.weight"):
                nn.init.normal_(p, 0.0, c.get("initializer_range", 0.02))

    def forward(self, ids, labels=None, past=None):
        p0 = 0 if past is None else past[0][0].shape[2]
        D = self.c["hidden_size"] // self.c["num_attention_heads"]
        w = self.model.embed_tokens.weight
        cos, sin = rope_cos_sin(p0, ids.shape[1], D, self.c["rope_theta"], w.dtype)
        x, presents = self.model.embed_tokens(ids), []
        for i, layer in enumerate(self.model.layers):
            x, pr = layer(x, cos, sin, None if past is None else past[i])
            presents.append(pr)
        x = self.model.norm(x)
        logits = x @ (w if self.c["tie_word_embeddings"] else self.lm_head.weight).t()
        return logits, None if labels is None else lm_loss(logits, labels), presents


@torch.no_grad()
def greedy(model, ids, n_new):
    """Greedy continuation with the KV cache; returns the new ids [B, n] and
    each step's margin (top-1 minus top-2 logit) [B, n]."""
    logits, _, past = model(ids)
    out, margins = [], []
    for i in range(n_new):
        last = logits[:, -1]
        top = last.topk(2, dim=-1).values
        nxt = last.argmax(-1, keepdim=True)
        out.append(nxt)
        margins.append(top[:, 0] - top[:, 1])
        if i < n_new - 1:
            logits, _, past = model(nxt, past=past)
    return torch.cat(out, dim=1), torch.stack(margins, dim=1)
