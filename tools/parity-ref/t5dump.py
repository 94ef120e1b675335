"""Writes the parity set of t5ref.py through shared/parity's dump.py (its
batch, AdamW steps and file layout), with the model built here, then its
decoding fixtures (shared/parity/README.md, "Decoding fixtures"): sources in
DIR/decode/prompts.txt, the greedy and beam-4 (length penalty 0.6)
continuations of N_NEW tokens in greedy.txt and beam4.txt, each computed by
full recomputation (no cache) over the model's own forward pass. A source is
kept only when every greedy step's top-1 beats the runner-up by 1e-2, every
beam step's kept candidate beats the first dropped one by 1e-2 (in
logprob / ((5 + len) / 6)^0.6), no PAD/BOS/EOS is ever emitted or kept (so no
hypothesis finishes), and float64 decodes the same ids.

  /usr/bin/python3 t5dump.py SHARED_PARITY_DIR --out DIR [dump.py options]
      (env N_DECODE, N_NEW: sources kept and tokens decoded; 6 and 10)
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, sys.argv[1])
import torch  # noqa: E402

import dump  # noqa: E402  shared/parity/dump.py
import t5ref  # noqa: E402


def build(kind, overrides):
    c = t5ref.T5Config(**overrides)
    m = t5ref.T5(c)
    t5ref.init_(m)
    return m, c


SPECIAL_MARGIN = 1e-2


def greedy(m, src, n_new):
    c = m.c
    mem, ok = m.encode(src)
    ys, worst = [c.bos_id], float("inf")
    for _ in range(n_new):
        lg = m.decode(torch.tensor([ys]), mem, ok)[0, -1]
        top = lg.topk(2)
        worst = min(worst, float(top.values[0] - top.values[1]))
        t = int(top.indices[0])
        if t in (c.pad_id, c.bos_id, c.eos_id):
            return None, 0.0
        ys.append(t)
    return ys[1:], worst


def beam(m, src, n_new, k=4, alpha=0.6):
    c = m.c
    mem, ok = m.encode(src)
    hyps, scores, worst = [[c.bos_id]], torch.zeros(1, dtype=mem.dtype), float("inf")
    for t in range(n_new):
        ys = torch.tensor(hyps)
        n = len(hyps)
        lp = m.decode(ys, mem.expand(n, -1, -1), ok.expand(n, -1, -1, -1))[:, -1].log_softmax(-1)
        V = lp.shape[-1]
        cand = (scores[:, None] + lp).reshape(-1)
        pen = ((5.0 + (t + 1)) / 6.0) ** alpha
        top = (cand / pen).topk(k + 1)
        worst = min(worst, float(top.values[k - 1] - top.values[k]))
        idx = top.indices[:k]
        for i in idx.tolist():
            if i % V in (c.pad_id, c.bos_id, c.eos_id):
                return None, 0.0
        hyps = [hyps[i // V] + [i % V] for i in idx.tolist()]
        scores = cand[idx]
    f = scores.topk(2)
    worst = min(worst, float(f.values[0] - f.values[1]) / (((5.0 + n_new) / 6.0) ** alpha))
    return hyps[int(f.indices[0])][1:], worst


def write_decode(out, seed):
    import copy
    n_keep, n_new = int(os.environ.get("N_DECODE", "6")), int(os.environ.get("N_NEW", "10"))
    m = MODEL[0].eval()
    m64 = copy.deepcopy(m).double()
    c = m.c
    gen = torch.Generator().manual_seed(seed + 100)
    rows, g_out, b_out = [], [], []
    with torch.no_grad():
        for _ in range(500):
            if len(rows) == n_keep:
                break
            L = int(torch.randint(6, 13, (1,), generator=gen))
            src = torch.randint(3, c.src_vocab, (1, L), generator=gen)
            g, gw = greedy(m, src, n_new)
            b, bw = beam(m, src, n_new)
            if g is None or b is None or gw < SPECIAL_MARGIN or bw < SPECIAL_MARGIN:
                continue
            if greedy(m64, src, n_new)[0] != g or beam(m64, src, n_new)[0] != b:
                continue
            rows.append(src[0].tolist()), g_out.append(g), b_out.append(b)
    if len(rows) < n_keep:
        sys.exit(f"t5dump: only {len(rows)} of {n_keep} sources decode with the margins")
    d = os.path.join(out, "decode")
    os.makedirs(d, exist_ok=True)
    for name, lines in (("prompts.txt", rows), ("greedy.txt", g_out), ("beam4.txt", b_out)):
        with open(os.path.join(d, name), "w") as f:
            f.write("".join(" ".join(map(str, r)) + "\n" for r in lines))
    print(f"decode: {len(rows)} sources, {n_new} tokens greedy and beam 4 -> {d}")


MODEL = []


def build_kept(kind, overrides):
    m, c = build(kind, overrides)
    MODEL.append(m)
    return m, c


dump.build = build_kept
if __name__ == "__main__":
    torch.manual_seed(0)
    args = sys.argv[2:]
    dump.main(["--model", "encdec"] + args)
    # the weights as written (before the AdamW steps changed the module's)
    st = dump.stio.load(os.path.join(args[args.index("--out") + 1], "model.safetensors"))
    with torch.no_grad():
        for n, p in MODEL[0].named_parameters():
            p.copy_(torch.as_tensor(st[n]))
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
    write_decode(args[args.index("--out") + 1], seed)
