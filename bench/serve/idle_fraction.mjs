// node bench/serve/idle_fraction.mjs CAF_LAUNCH BATCHES [FLAG...]: for each batch size (comma-
// separated) and each scheduling (--async-scheduling off, then on), one embedded-default server
// (FLAG... added, e.g. --model DIR --speculative variable), BATCH concurrent greedy chats of 400
// tokens; prints every decode rank's deepinfer_decode_idle_fraction, the median of samples every
// 250 ms from 1 s in until the first request ends (the batch at full size), and the aggregate
// output tokens/s until the last one ends. Side by side in one run, on the same machine.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

const [exe, batches, ...flags] = process.argv.slice(2);
if (!exe || !batches) {
  console.error('usage: node bench/serve/idle_fraction.mjs CAF_LAUNCH BATCHES [FLAG...]');
  process.exit(2);
}

async function run(batch, scheduling) {
  const port = 18000 + Math.floor(Math.random() * 1000);
  const kv = fs.mkdtempSync('/tmp/idle-kv-');
  const args = ['--http', `127.0.0.1:${port}`, '--log-level', 'warn', '--kv-root', kv, '--async-scheduling', scheduling, ...flags];
  const p = spawn(exe, args, { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; ++i) {
    try { if ((await fetch(base + '/health')).ok) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  const req = (i) => fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'deepseek-v4.1-flash', max_tokens: 400, temperature: 0,
                           messages: [{ role: 'user', content: `prompt number ${i} ` + 'abc '.repeat(i % 7) }] }),
  }).then((r) => r.json());
  const t0 = performance.now();
  let ended = false;
  const reqs = [...Array(batch).keys()].map(req);
  for (const r of reqs) r.then(() => { ended = true; }, () => { ended = true; });
  const all = Promise.all(reqs);
  const done = all.then(() => performance.now());
  // The gauge every 250 ms from 1 s in until the first request ends (the batch at full size):
  // per rank, the median of the samples.
  const samples = [];
  await new Promise((r) => setTimeout(r, 1000));
  while (!ended) {
    const t = await (await fetch(base + '/metrics')).text();
    samples.push(t.split('\n').filter((l) => l.startsWith('deepinfer_decode_idle_fraction{'))
      .map((l) => Number(l.trim().split(/\s+/).pop())));
    await new Promise((r) => setTimeout(r, 250));
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const idle = samples.length === 0 ? [] : samples[0].map((_, k) => median(samples.map((x) => x[k])).toFixed(3));
  const res = await all;
  const seconds = ((await done) - t0) / 1000;
  const tokens = res.reduce((n, r) => n + (r.usage?.completion_tokens ?? 0), 0);
  const texts = res.map((r) => r.choices?.[0]?.message?.content ?? JSON.stringify(r).slice(0, 200));
  p.kill('SIGINT');
  await new Promise((r) => p.on('exit', r));
  fs.rmSync(kv, { recursive: true, force: true });
  return { idle, rate: tokens / seconds, texts };
}

console.log('| batch | async | idle fraction per decode rank | output tok/s |');
console.log('|---|---|---|---|');
for (const batch of batches.split(',').map(Number)) {
  const off = await run(batch, 'off');
  const on = await run(batch, 'on');
  for (const [name, r] of [['off', off], ['on', on]])
    console.log(`| ${batch} | ${name} | ${r.idle.join(' / ')} | ${r.rate.toFixed(0)} |`);
  const same = off.texts.every((t, i) => t === on.texts[i]);
  console.log(`|   |   | greedy texts the same with async on and off: ${same} | |`);
}
