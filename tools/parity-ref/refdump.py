"""Writes a parity fixture set of refmodels.py (tools/parity-llama runs it):
the weights, a batch, the reference's outputs, gradients and AdamW steps, and
greedy continuations, in the layout of shared/parity's fixtures
(shared/parity/README.md), so that tools/parity and generate check nlpipe
against it as they check the shared sets.

  /usr/bin/python3 refdump.py --model gpt|llama --config JSON --out DIR
        [--seed N] [--batch B] [--seq T] [--init-std S] [--perturb P]
        [--adam-steps K] [--lr ...] [--hf [--shards N] [--dtype f32|bf16|f16]]
        [--decode N_EXAMPLES --n-new N --prompt-len P] [--double]

Writes DIR/model.safetensors (gpt: our metadata "model" gpt and "config";
with --hf, llama: HF's layout, config.json beside and {"format": "pt"} only,
in N shards with model.safetensors.index.json, weights stored as --dtype and
the reference computing with the stored values), DIR/inputs.safetensors
(input_ids, labels), DIR/ref.safetensors (logits, loss, grad.*,
adamw.stepK.*, loss.stepK, grad.stepK.*), and with --decode
DIR/decode/prompts.txt, DIR/decode/greedy.txt, DIR/decode.safetensors
(prompt_ids, greedy_ids, greedy_margin): prompts whose every greedy step's
top-1 logit beats the runner-up by at least 1e-2 and that decode to the same
ids in float64, so that a correct fp32 implementation cannot miss them by
rounding. Only torch, numpy and the standard library.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refmodels as R  # noqa: E402

ST = {torch.float32: "F32", torch.int32: "I32", torch.bfloat16: "BF16", torch.float16: "F16"}


def st_save(path, tensors, meta=None):
    """safetensors: u64 header length, JSON header (padded to 8), raw data."""
    header, blobs, off = {}, [], 0
    if meta:
        header["__metadata__"] = {str(k): str(v) for k, v in meta.items()}
    for name, t in tensors.items():
        t = t.detach().contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": ST[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def build(kind, c):
    return R.GPTRope(c) if kind == "gpt" else R.Llama(c)


def hf_config(c):
    return dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu", attention_bias=False,
                mlp_bias=False, rope_scaling=None, torch_dtype="float32", **c)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["gpt", "llama"], required=True)
    ap.add_argument("--config", default="{}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--init-std", type=float, default=0.02, help="std of the N(0, s) matrices and embeddings")
    ap.add_argument("--perturb", type=float, default=0.1, help="noise added to norm weights and biases")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--adam-steps", type=int, default=2)
    ap.add_argument("--hf", action="store_true", help="llama: HF's directory layout")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--dtype", choices=["f32", "bf16", "f16"], default="f32")
    ap.add_argument("--decode", type=int, default=0, help="greedy examples to keep")
    ap.add_argument("--n-new", type=int, default=12)
    ap.add_argument("--prompt-len", type=int, default=6)
    ap.add_argument("--double", action="store_true", help="compute in float64 from the same fp32 weights")
    a = ap.parse_args(argv)

    torch.manual_seed(a.seed)
    c = json.loads(a.config)
    if a.model == "llama":
        c.setdefault("initializer_range", a.init_std)
    model = build(a.model, c)
    with torch.no_grad():
        for name, p in model.named_parameters():
            norm_or_bias = name.endswith("bias") or "ln_" in name or "norm" in name
            if norm_or_bias:
                p.add_(a.perturb * torch.randn_like(p))
            elif a.model == "gpt":
                p.mul_(a.init_std / 0.02)  # the HF init scaled to --init-std
        stored = {torch.float32: None, "f32": None, "bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
        if stored is not None:  # the reference computes with the weights as stored
            for p in model.parameters():
                p.copy_(p.to(stored).float())
    params = dict(model.named_parameters())
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}  # for decoding
    os.makedirs(a.out, exist_ok=True)
    meta = {"model": a.model, "seed": a.seed, "batch": a.batch, "seq": a.seq, "perturb": a.perturb,
            "init_std": a.init_std, "double": a.double, "reference": "tools/parity-ref/refmodels.py"}
    if a.model == "gpt":
        full = dict(c, dropout=0.0, pos="rope")
        st_save(os.path.join(a.out, "model.safetensors"), {k: v.float() for k, v in params.items()},
                dict(meta, config=json.dumps(full)))
    elif a.hf:
        with open(os.path.join(a.out, "config.json"), "w") as f:
            json.dump(hf_config(c), f, indent=1)
        dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
        names = sorted(params)
        if a.shards == 1:
            st_save(os.path.join(a.out, "model.safetensors"), {k: params[k].to(dt) for k in names}, {"format": "pt"})
        else:
            wm = {}
            for s in range(a.shards):
                fn = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
                part = names[s::a.shards]
                st_save(os.path.join(a.out, fn), {k: params[k].to(dt) for k in part}, {"format": "pt"})
                wm.update({k: fn for k in part})
            with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
                json.dump({"metadata": {"total_size": 0}, "weight_map": wm}, f, indent=1)
    else:
        st_save(os.path.join(a.out, "model.safetensors"), {k: v.float() for k, v in params.items()},
                dict(meta, config=json.dumps(hf_config(c))))
    gen = torch.Generator().manual_seed(a.seed + 1)
    V = c["vocab_size"]
    ids = torch.randint(V, (a.batch, a.seq), generator=gen)
    labels = ids.clone()
    labels[0, a.seq // 2] = -100
    st_save(os.path.join(a.out, "inputs.safetensors"),
            {"input_ids": ids.to(torch.int32), "labels": labels.to(torch.int32)}, meta)

    if a.double:
        model.double()
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps, weight_decay=a.wd)
    ref = {}
    for step in range(1, a.adam_steps + 1):
        opt.zero_grad(set_to_none=True)
        logits, loss, _ = model(ids, labels)
        loss.backward()
        if step == 1:
            ref.update(logits=logits.detach(), loss=loss.detach())
            ref.update({"grad." + n: p.grad for n, p in params.items()})
        else:
            ref[f"loss.step{step}"] = loss.detach()
            ref.update({f"grad.step{step}.{n}": p.grad.clone() for n, p in params.items()})
        opt.step()
        ref.update({f"adamw.step{step}.{n}": p.detach().clone() for n, p in params.items()})
    if a.adam_steps == 0:
        logits, loss, _ = model(ids, labels)
        loss.backward()
        ref.update(logits=logits.detach(), loss=loss.detach())
        ref.update({"grad." + n: p.grad for n, p in params.items()})
    meta.update(optimizer="torch.optim.AdamW", lr=a.lr, beta1=a.beta1, beta2=a.beta2, eps=a.eps, wd=a.wd,
                adam_steps=a.adam_steps)
    st_save(os.path.join(a.out, "ref.safetensors"), {k: v.float() for k, v in ref.items()}, meta)
    print(f"{a.out}: {a.model}, {sum(p.numel() for p in params.values())} parameters, loss {ref['loss'].item():.6f}")

    if a.decode:  # greedy continuations from the initial weights, robust to rounding
        fresh = build(a.model, c)
        fresh.load_state_dict(initial)
        keep_p, keep_g, keep_m = [], [], []
        dbl = build(a.model, c)
        dbl.load_state_dict(fresh.state_dict())
        dbl.double()
        tries = 0
        while len(keep_p) < a.decode and tries < 400:
            tries += 1
            prompt = torch.randint(V, (1, a.prompt_len), generator=gen)
            g, marg = R.greedy(fresh, prompt, a.n_new)
            g64, _ = R.greedy(dbl, prompt, a.n_new)
            if marg.min().item() < 1e-2 or not torch.equal(g, g64) or len(set(g[0].tolist())) < 3:
                continue
            keep_p.append(prompt[0]), keep_g.append(g[0]), keep_m.append(marg[0])
        if len(keep_p) < a.decode:
            sys.exit(f"{a.out}: only {len(keep_p)} of {a.decode} robust decoding examples in {tries} tries")
        P, G, M = torch.stack(keep_p), torch.stack(keep_g), torch.stack(keep_m)
        # the whole set as one batch gives the same ids
        gb, _ = R.greedy(fresh, P, a.n_new)
        assert torch.equal(gb, G), "batched greedy differs"
        os.makedirs(os.path.join(a.out, "decode"), exist_ok=True)
        with open(os.path.join(a.out, "decode", "prompts.txt"), "w") as f:
            f.writelines(" ".join(map(str, r.tolist())) + "\n" for r in P)
        with open(os.path.join(a.out, "decode", "greedy.txt"), "w") as f:
            f.writelines(" ".join(map(str, r.tolist())) + "\n" for r in G)
        st_save(os.path.join(a.out, "decode.safetensors"),
                {"prompt_ids": P.to(torch.int32), "greedy_ids": G.to(torch.int32), "greedy_margin": M.float()},
                dict(n_new=a.n_new, examples=a.decode, min_greedy_margin=f"{M.min().item():.4g}"))
        print(f"{a.out}: {a.decode} greedy examples of {a.n_new} ids, min margin {M.min().item():.4g}")


if __name__ == "__main__":
    main()
