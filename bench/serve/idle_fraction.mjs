// node bench/serve/idle_fraction.mjs CAF_LAUNCH [MODEL_DIR MODE] BATCH: one embedded-default server, BATCH
// concurrent greedy chats of 400 tokens; prints every decode rank's deepinfer_decode_idle_fraction 12 s in.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
const [exe, model, mode, n] = process.argv.slice(2);
const port = 18000 + Math.floor(Math.random() * 1000);
const kv = fs.mkdtempSync('/tmp/idle-kv-');
const args = ['--http', `127.0.0.1:${port}`, '--log-level', 'warn', '--kv-root', kv];
if (model) args.push('--model', model, '--speculative', mode);
const p = spawn(exe, args, { stdio: 'ignore' });
const base = `http://127.0.0.1:${port}`;
for (let i = 0; i < 600; ++i) { try { if ((await fetch(base + '/health')).ok) break; } catch {} await new Promise((r) => setTimeout(r, 100)); }
const req = (i) => fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'deepseek-v4.1-flash', messages: [{ role: 'user', content: `prompt number ${i} ` + 'abc '.repeat(i % 7) }], max_tokens: 400, temperature: 0 }) }).then((r) => r.json());
const all = Promise.all([...Array(Number(n)).keys()].map(req));
await new Promise((r) => setTimeout(r, 12000));
const t = await (await fetch(base + '/metrics')).text();
console.log(mode, 'batch', n, t.split('\n').filter((l) => l.startsWith('deepinfer_decode_idle_fraction{')).join(' | '));
const res = await all; console.log(JSON.stringify(res[0]).slice(0, 300));
p.kill('SIGINT');
await new Promise((r) => p.on('exit', r));
fs.rmSync(kv, { recursive: true, force: true });
