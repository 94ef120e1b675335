// tests/data/spm/hf-decode.js TOKENIZER.json IDS.txt — decodes each line of
// ids with HF tokenizers (Node binding; skip_special_tokens false) and writes
// the texts each ended by a NUL byte (a decoded text may hold a newline), as
// `tokenize -d -z` does. Peer modules: PEERS_NODE_MODULES (default
// /tmp/nlpipe-peers/node_modules, see ../../../../shared/peers/README.md).
const fs = require('fs');
const NM = process.env.PEERS_NODE_MODULES || '/tmp/nlpipe-peers/node_modules';
const hf = require(NM + '/tokenizers');
(async () => {
  const t = hf.Tokenizer.fromFile(process.argv[2]);
  const lines = fs.readFileSync(process.argv[3], 'utf8').split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const out = [];
  for (const l of lines) {
    const ids = l.trim() ? l.trim().split(/\s+/).map(Number) : [];
    const r = t.decode(ids, false);
    out.push((r && r.then ? await r : r) + '\0');
  }
  fs.writeSync(1, out.join(''));
})().catch(e => { console.error(e); process.exit(1); });
