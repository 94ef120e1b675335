#!/usr/bin/env python3
"""Checks bleu's score(s) against each case of a sacreBLEU vectors directory
(the `score` or `scores` of expected.json), within 1e-9 relative (an expected
0 must be exactly 0): what shared/vectors/bleu-compare.sh checks with
METRICS=all, for the compact copy in tests/data/golden, which carries no
copy of that script.

Usage: bleu-scores.py BLEU VECTORS_DIR
Prints one FAIL line per mismatch and a final `N passed, N failed`.
"""
import json, os, subprocess, sys

bleu, vec = sys.argv[1], sys.argv[2]
passed = failed = 0
for name in sorted(os.listdir(vec)):
    d = os.path.join(vec, name)
    if name.startswith('_') or not os.path.isdir(d):
        continue
    exp = json.load(open(os.path.join(d, 'expected.json'), encoding='utf-8'))
    want = exp['scores'] if 'scores' in exp else [exp['score']]
    refs = sorted((f for f in os.listdir(d) if f.startswith('ref') and f.endswith('.txt')), key=lambda f: int(f[3:-4]))
    args = open(os.path.join(d, 'args.txt'), encoding='utf-8').readline().split()
    r = subprocess.run([bleu] + [os.path.join(d, f) for f in refs] + ['-i', os.path.join(d, 'hyp.txt')] + args +
                       ['-b', '-w', '30'], capture_output=True)
    got = [float(l.split()[0]) for l in r.stdout.decode().splitlines() if l.strip()]
    ok = r.returncode == 0 and len(got) == len(want) and all(
        (g == 0 if w == 0 else abs(g - w) <= 1e-9 * abs(w)) for g, w in zip(got, want))
    if ok:
        passed += 1
    else:
        failed += 1
        print(f'FAIL {name} (exit {r.returncode}): expected {want[:5]}, got {got[:5]} {r.stderr.decode()[:200]}')
print(f'{passed} passed, {failed} failed')
sys.exit(1 if failed else 0)
