// bench/serve/handoff.mjs: handoff time vs KV size (issue 17). For each prompt length a fresh
// four-process loopback cluster (startTwoDecodeCluster) gets two greedy streams of that length (the
// decode balancer puts one on each decode node); once both decode, `POST /admin/drain` with no
// grace moves d0's to d1. Prints, per length: the KV bytes moved, the export time on d0, the pause
// the request saw (offer to the new rank's first tokens) and the largest gap between two tokens
// the client saw against its median gap.
// Usage: node bench/serve/handoff.mjs build/launcher/caf-launch [words ...]   (default 300 1500 4000)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTwoDecodeCluster, streamChat, waitFor } from '../../tests/serve/harness.mjs';

const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const lengths = process.argv.length > 3 ? process.argv.slice(3).map(Number) : [300, 1500, 4000];

async function one(words) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-handoff-'));
  const c = await startTwoDecodeCluster(exe, dir, { tables: '[http]\nadmin = true\n' });
  try {
    await waitFor('the cluster', async () => {
      try { return (await fetch(c.cluster + '/health')).ok && (await fetch(c.cluster + '/v1/chat/completions', {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }) })).ok; }
      catch { return false; }
    }, { deadlineMs: 120000, everyMs: 200 });
    const times = [[], []];
    const runs = [0, 1].map((k) => streamChat(c.cluster, {
      model: MODEL, temperature: 0, max_tokens: 96,
      messages: [{ role: 'user', content: Array.from({ length: words }, (_, j) => `w${(k * 31 + j * 7) % 997}`).join(' ') }] },
    () => times[k].push(performance.now())));
    await waitFor('both streams decoding', () => times.every((t) => t.length >= 8), { deadlineMs: 300000, everyMs: 5 });
    const r = await fetch(c.cluster + '/admin/drain', { method: 'POST', body: JSON.stringify({ instance: 'd0/decode', grace_s: 0 }) });
    if (r.status !== 202) throw new Error(`drain: ${r.status} ${await r.text()}`);
    const out = await Promise.all(runs);
    const log = fs.readFileSync(c.logPath, 'utf8');
    const rank = log.match(/handed off to .* kv_bytes=(\d+) export_ms=([\d.]+)/);
    const req = log.match(/id=(\S+) handed off: (\d+) tokens so far, stream paused ([\d.]+) ms/);
    if (!rank || !req)
      throw new Error('no handoff in the log; its warnings:\n' +
                      log.split('\n').filter((l) => / (warning|error) |drain notice|decode placed|drained/.test(l)).slice(-12).join('\n'));
    const k = out.findIndex((o) => o.id === req[1]);
    const gaps = times[k].slice(1).map((t, i) => t - times[k][i]).sort((a, b) => a - b);
    return { words, kv_mib: Number(rank[1]) / 2 ** 20, export_ms: Number(rank[2]), tokens: Number(req[2]),
             pause_ms: Number(req[3]), max_gap_ms: gaps[gaps.length - 1], median_gap_ms: gaps[gaps.length >> 1] };
  } finally {
    for (const p of c.procs) p.kill('SIGINT');
    await Promise.all(c.procs.map((p) => new Promise((res) => (p.exitCode !== null ? res() : p.on('exit', res)))));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

console.log('| prompt words | KV moved (MiB) | export on d0 (ms) | tokens out at the move | pause: offer -> new rank\'s first tokens (ms) | largest gap the client saw (ms) | median gap (ms) |');
console.log('|---|---|---|---|---|---|---|');
for (const w of lengths) {
  const m = await one(w);
  console.log(`| ${m.words} | ${m.kv_mib.toFixed(2)} | ${m.export_ms.toFixed(1)} | ${m.tokens} | ${m.pause_ms.toFixed(0)} | ` +
              `${m.max_gap_ms.toFixed(0)} | ${m.median_gap_ms.toFixed(0)} |`);
}
