#!/usr/bin/env python3
# split-rows.py ROWS.jsonl DIR [WRAP_FIRST WRAP_LAST] — the tokenizer golden
# suites' input: the rows of a vectors .jsonl file ({"hex", "ids", "tokens"})
# split by how they can go through `tokenize`: rows holding a newline or a
# carriage return as NUL-terminated records (mode z), the others as lines
# (mode lf). Writes, per mode, in.MODE (the exact bytes), ids.MODE, pieces.MODE
# (the expected output), valid.MODE (1/0: is the row valid UTF-8), and with
# WRAP_* cls.MODE (the ids between those two ids, as a template adds them);
# then nrows and ninvalid.
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1])]
d = sys.argv[2]
wrap = [int(x) for x in sys.argv[3:5]]


def valid(r):
    try:
        bytes.fromhex(r['hex']).decode('utf-8')
        return 1
    except UnicodeDecodeError:
        return 0


for mode, sep in (('lf', b'\n'), ('z', b'\0')):
    pick = [r for r in rows
            if (b'\n' in bytes.fromhex(r['hex']) or b'\r' in bytes.fromhex(r['hex'])) == (mode == 'z')]
    s = sep.decode()
    open(d + '/in.' + mode, 'wb').write(b''.join(bytes.fromhex(r['hex']) + sep for r in pick))
    open(d + '/ids.' + mode, 'w').write(''.join(' '.join(map(str, r['ids'])) + s for r in pick))
    open(d + '/pieces.' + mode, 'w', encoding='utf-8').write(''.join(' '.join(r['tokens']) + s for r in pick))
    open(d + '/valid.' + mode, 'w').write(' '.join(str(valid(r)) for r in pick))
    if wrap:
        open(d + '/cls.' + mode, 'w').write(''.join(' '.join(map(str, wrap[:1] + r['ids'] + wrap[1:])) + s for r in pick))
open(d + '/nrows', 'w').write(str(len(rows)))
open(d + '/ninvalid', 'w').write(str(sum(1 - valid(r) for r in rows)))
