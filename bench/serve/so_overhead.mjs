// bench/serve/so_overhead.mjs: decode tokens/s with a JSON schema vs without (issue 19), at
// batch 1 and 64, on one embedded-default server, the two modes alternating per round so machine
// noise hits both alike. Every request is greedy with fresh prompt words (no prefix hit) and
// max_tokens tokens; tokens/s = completion tokens / wall time of the round. With the schema the
// output is a JSON object (masks on every token, completed within max_tokens).
// Usage: node bench/serve/so_overhead.mjs EXE [--batches=1,64] [--rounds=3] [--max-tokens=64]
import os from 'node:os';

import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';

const opts = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exe = process.argv.slice(2).find((a) => !a.startsWith('--'));
if (!exe) {
  console.error('usage: node bench/serve/so_overhead.mjs EXE [--batches=1,64] [--rounds=3] [--max-tokens=64]');
  process.exit(2);
}
const batches = (opts.batches ?? '1,64').split(',').map(Number);
const rounds = Number(opts.rounds ?? 3), maxTokens = Number(opts['max-tokens'] ?? 64);
const MODEL = 'deepseek-v4.1-flash';
const schema = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } },
                address: { type: 'object', properties: { city: { type: 'string' }, zip: { type: 'string' } }, required: ['city', 'zip'] } },
  required: ['name', 'age', 'tags', 'address'],
};

let salt = 0;
const prompt = () => { const s = ++salt; return Array.from({ length: 60 }, (_, i) => `z${(i * 7919 + s * 104729) % 99991}`).join(' '); };

async function one(base, constrained) {
  const body = { model: MODEL, temperature: 0, max_tokens: maxTokens, messages: [{ role: 'user', content: prompt() }] };
  if (constrained) body.response_format = { type: 'json_schema', json_schema: { name: 'p', schema } };
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${JSON.stringify(j)}`);
  if (constrained) JSON.parse(j.choices[0].message.content);
  return j.usage.completion_tokens;
}

const server = await startServer(exe, { kvPrefix: 'deepinfer-so-bench-kv-' });
try {
  await serverUp(server);
  await one(server.base, true); // the compile and the vocabulary load are not what is measured
  console.log(`# ${os.cpus()[0].model}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; ${maxTokens} tokens, ${rounds} rounds`);
  console.log('| batch | tokens/s without schema | tokens/s with schema | overhead |');
  console.log('|---|---|---|---|');
  for (const batch of batches) {
    const tps = { false: [], true: [] };
    for (let k = 0; k < rounds; k++)
      for (const constrained of [false, true]) {
        const t0 = performance.now();
        const n = (await Promise.all(Array.from({ length: batch }, () => one(server.base, constrained)))).reduce((a, b) => a + b, 0);
        tps[constrained].push(n / ((performance.now() - t0) / 1000));
      }
    const best = (xs) => Math.max(...xs);
    const [plain, so] = [best(tps.false), best(tps.true)];
    console.log(`| ${batch} | ${plain.toFixed(1)} | ${so.toFixed(1)} | ${((1 - so / plain) * 100).toFixed(1)} % |`);
  }
} finally {
  await stopServer(server);
}
