#!/usr/bin/env python3
"""Checks bleu's text and JSON output byte for byte against the `text` and
`json` fields of each shared/vectors/bleu case (sacreBLEU 2.5.1's output).

Usage: bleu-format.py BLEU VECTORS_DIR
Our signatures say version:2.5.1+nlpipe where sacreBLEU says 2.5.1; that one
token is mapped back before comparing. Prints one FAIL line per mismatch and
a final `N passed, N failed`. Needs Python 3 only to render the expected
JSON exactly as sacreBLEU does (json.dumps(indent=1, ensure_ascii=False)).
"""
import json, os, subprocess, sys

bleu, vec = sys.argv[1], sys.argv[2]
passed = failed = 0
for name in sorted(os.listdir(vec)):
    d = os.path.join(vec, name)
    if name.startswith('_') or not os.path.isdir(d):
        continue
    exp = json.load(open(os.path.join(d, 'expected.json'), encoding='utf-8'))
    refs = sorted((f for f in os.listdir(d) if f.startswith('ref') and f.endswith('.txt')),
                  key=lambda f: int(f[3:-4]))
    args = open(os.path.join(d, 'args.txt'), encoding='utf-8').readline().split()
    base = [bleu] + [os.path.join(d, r) for r in refs] + ['-i', os.path.join(d, 'hyp.txt')] + args
    checks = []
    if exp['level'] == 'sentence':
        checks.append((['-f', 'text'], '\n'.join(exp['text']) + '\n'))
    else:
        checks.append((['-f', 'text'], exp['text'] + '\n'))
        checks.append(([], json.dumps(exp['json'], indent=1, ensure_ascii=False) + '\n'))
    for extra, want in checks:
        r = subprocess.run(base + extra, capture_output=True)
        got = r.stdout.decode('utf-8', 'replace').replace('version:2.5.1+nlpipe', 'version:2.5.1') \
            .replace('"version": "2.5.1+nlpipe"', '"version": "2.5.1"')
        if r.returncode == 0 and got == want:
            passed += 1
        else:
            failed += 1
            print(f'FAIL {name} {" ".join(extra) or "json"} (exit {r.returncode})')
            print(f'  want: {want!r}')
            print(f'  got:  {got!r}')
print(f'{passed} passed, {failed} failed')
sys.exit(1 if failed else 0)
