// bench/serve/ttft.mjs: TTFT and aggregate tokens/s of the embedded default against 1..N
// concurrent streams, and TTFT of a long prompt cold (fresh KV root) vs hot (same prompt again,
// served from the prefix cache).
// Usage: node bench/serve/ttft.mjs build/launcher/caf-launch [max_concurrency=64] [long_words=15000]
// SERVER_ARGS="--cpu-isa avx2" passes extra flags to the server (e.g. to compare ISAs on one machine).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const [exe, maxConc = '64', longWords = '15000'] = process.argv.slice(2);
const MODEL = 'deepseek-v4.1-flash';
const port = await new Promise((r) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => r(p)); }); });
const base = `http://127.0.0.1:${port}`;
const kvRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-bench-kv-'));
const extra = (process.env.SERVER_ARGS ?? '').split(' ').filter(Boolean);
const server = spawn(exe, ['--http', `127.0.0.1:${port}`, '--log-level', 'warn', '--kv-root', kvRoot, ...extra], { stdio: 'ignore' });
for (;;) { try { if ((await fetch(base + '/health')).ok) break; } catch {} await new Promise((r) => setTimeout(r, 50)); }

async function stream(content, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0,
                           stream: true, stream_options: { include_usage: true } }) });
  const reader = r.body.getReader(); const dec = new TextDecoder();
  let ttft = null; let text = ''; let usage = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
    // The first event is the role chunk; the second carries the first token.
    if (ttft === null && (text.match(/^data: /gm) || []).length >= 2) ttft = performance.now() - t0;
  }
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${text}`);
  for (const line of text.split('\n')) if (line.startsWith('data: {') && line.includes('"usage":{')) usage = JSON.parse(line.slice(6)).usage;
  return { ttft: ttft ?? performance.now() - t0, total: performance.now() - t0, usage };
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

console.log('| concurrency | median TTFT ms | p90 TTFT ms | aggregate tokens/s |');
console.log('|---|---|---|---|');
for (let c = 1; c <= Number(maxConc); c *= 4) {
  const t0 = performance.now();
  const rs = await Promise.all(Array.from({ length: c }, (_, i) => stream(`Bench request ${i}.`, 32)));
  const secs = (performance.now() - t0) / 1000;
  const toks = rs.reduce((a, r) => a + (r.usage?.completion_tokens ?? 0), 0);
  const ttfts = rs.map((r) => r.ttft).sort((a, b) => a - b);
  console.log(`| ${c} | ${median(ttfts).toFixed(1)} | ${ttfts[Math.floor(ttfts.length * 0.9)].toFixed(1)} | ${(toks / secs).toFixed(0)} |`);
}
const long = Array.from({ length: Number(longWords) }, (_, i) => `w${(i * 7919) % 1009}`).join(' ');
const cold = await stream(long, 4);
const hot = await stream(long, 4);
console.log(`\nlong prompt: ${cold.usage.prompt_tokens} tokens; cold TTFT ${cold.ttft.toFixed(0)} ms (cached ${cold.usage.prompt_tokens_details?.cached_tokens ?? 0}); ` +
            `hot TTFT ${hot.ttft.toFixed(0)} ms (cached ${hot.usage.prompt_tokens_details?.cached_tokens ?? 0}); ratio ${(cold.ttft / hot.ttft).toFixed(1)}x`);
server.kill('SIGINT');
fs.rmSync(kvRoot, { recursive: true, force: true });
