#!/usr/bin/env python3
"""st-compare.py REF OUT — every tensor of the safetensors file REF against the
same name in OUT, as shared/parity/compare.py does with its defaults
(|out - ref| <= atol + rtol*|ref| for every element: rtol 1e-4, atol 1e-5),
except the key biases' gradients (grad.*c_attn.bias, whose reference values
are rounding noise around 0: atol 1e-5 alone), as tests/golden/parity.sh
checks them. Standard library only (F32 tensors). Prints one line per tensor
that fails and `compared N tensors`; exit 0 when all pass, 1 otherwise.
"""
import array, json, re, struct, sys


def load(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == '__metadata__':
            continue
        if v['dtype'] != 'F32':
            raise SystemExit(f'{path}: {k} is {v["dtype"]}, not F32')
        s, e = v['data_offsets']
        a = array.array('f')
        a.frombytes(b[8 + n + s:8 + n + e])
        if sys.byteorder != 'little':
            a.byteswap()
        out[k] = (v['shape'], a)
    return out


ref, got = load(sys.argv[1]), load(sys.argv[2])
bad = 0
for k, (shape, r) in ref.items():
    if k not in got or got[k][0] != shape:
        print(f'FAIL {k}: missing or of another shape in {sys.argv[2]}')
        bad += 1
        continue
    rtol, atol = (0.0, 1e-5) if re.search(r'^grad\..*c_attn\.bias$', k) else (1e-4, 1e-5)
    worst = max((abs(t - x) - (atol + rtol * abs(x)) for t, x in zip(got[k][1], r)), default=-1)
    if worst > 0:
        print(f'FAIL {k}: off by {worst:.3g} beyond the tolerance (rtol {rtol}, atol {atol})')
        bad += 1
print(f'compared {len(ref)} tensors')
sys.exit(1 if bad else 0)
