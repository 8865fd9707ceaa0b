// bench/serve/vision_turns.mjs: two image workloads on the embedded default, for each caf-launch
// binary given, the binaries taking turns round by round (so machine noise hits both alike).
// 1. Bursts of large bodies (issue 21): `burst` requests at once, each a 4 MB body (an
//    1100 x 1000 PNG, over max_pixels, so the entrypoint parses it and refuses it with a 400 and
//    no encoder runs), sent by a worker thread as another client would; a text probe 8 ms into
//    each burst, and one between bursts. Measures what parsing large bodies costs the text path.
// 2. A chat resent turn after turn (issue 21): a 1024 x 1024 image in the first user message,
//    ~1,200 tokens of text, then each turn the whole conversation again plus one question (what
//    every chat client sends). Measures each turn's time to its answer (max_tokens 2: with 1,
//    binaries before db54489 stored no blocks of the prompt at all).
// Usage: node bench/serve/vision_turns.mjs EXE [EXE...] [--rounds=3] [--bursts=30] [--burst=6]
//        [--turns=4]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import os from 'node:os';

import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';
import { dataUri, png } from '../../tests/serve/images.mjs';

const MODEL = 'deepseek-v4.1-flash';
const post = (base, body) => fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });

if (!isMainThread) {
  // The burst client: its own event loop, so the probes' timing is not this client's JSON work.
  const big = JSON.stringify({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: [
    { type: 'image_url', image_url: { url: dataUri(png(1100, 1000, 3)) } }, { type: 'text', text: 'x' }] }] });
  parentPort.on('message', async ({ base, n }) => {
    parentPort.postMessage(await Promise.all(Array.from({ length: n }, () => post(base, big).then((r) => r.status))));
  });
} else {
  const argv = process.argv.slice(2);
  const opts = Object.fromEntries(argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
  const exes = argv.filter((a) => !a.startsWith('--'));
  if (exes.length === 0) {
    console.error('usage: node bench/serve/vision_turns.mjs EXE [EXE...] [--rounds=3] [--bursts=30] [--burst=6] [--turns=4]');
    process.exit(2);
  }
  const rounds = Number(opts.rounds ?? 3), bursts = Number(opts.bursts ?? 30), burst = Number(opts.burst ?? 6);
  const turns = Number(opts.turns ?? 4);
  const pct = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const timed = async (base, body) => {
    const t = performance.now();
    const r = await post(base, body);
    const json = await r.json();
    if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${JSON.stringify(json)}`);
    return { ms: performance.now() - t, json };
  };
  const probe = (base, i) => timed(base, JSON.stringify({ model: MODEL, max_tokens: 1, temperature: 0,
                                                        messages: [{ role: 'user', content: `Probe ${i}: what is the capital of France?` }] }));
  const worker = new Worker(new URL(import.meta.url));
  worker.unref();

  async function bursting(base) {
    const quiet = [], during = [], statuses = {};
    for (let i = 0; i < 20; ++i) await probe(base, i);
    for (let r = 0; r < bursts; ++r) {
      quiet.push((await probe(base, 1000 + r)).ms);
      await sleep(100);
      const done = new Promise((res) => worker.once('message', res));
      worker.postMessage({ base, n: burst });
      await sleep(8);
      during.push((await probe(base, 2000 + r)).ms);
      for (const s of await done) statuses[s] = (statuses[s] ?? 0) + 1;
      await sleep(100);
    }
    return { quiet, during, statuses };
  }

  async function chatTurns(base, seed) {
    const text = Array.from({ length: 600 }, (_, i) => `v${(i * 104729 + seed) % 2003}`).join(' ');
    const messages = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(png(1024, 1024, 5000 + seed)) } },
                                                 { type: 'text', text: text + ' What is in the picture?' }] }];
    const out = [];
    for (let t = 0; t < turns; ++t) {
      const { ms, json } = await timed(base, JSON.stringify({ model: MODEL, max_tokens: 2, temperature: 0, messages }));
      out.push({ ms, cached: json.usage.prompt_tokens_details?.cached_tokens ?? 0, prompt: json.usage.prompt_tokens });
      messages.push({ role: 'assistant', content: json.choices[0].message.content || 'ok' });
      messages.push({ role: 'user', content: `Question ${t + 2}: and what else do you see there?` });
    }
    return out;
  }

  console.log(`# vision turns: ${os.cpus()[0]?.model} x ${os.cpus().length}; bursts of ${burst} 4 MB bodies (${bursts} per round), ` +
              `a ${turns}-turn chat with a 1024x1024 image; ${rounds} rounds`);
  const res = Object.fromEntries(exes.map((e) => [e, { quiet: [], during: [], statuses: {}, turns: [] }]));
  for (let r = 0; r < rounds; ++r)
    for (const exe of exes) {
      const s = await startServer(exe, { name: exe, kvPrefix: 'deepinfer-vision-turns-kv-' });
      try {
        await serverUp(s);
        const b = await bursting(s.base);
        const acc = res[exe];
        acc.quiet.push(...b.quiet);
        acc.during.push(...b.during);
        for (const [k, v] of Object.entries(b.statuses)) acc.statuses[k] = (acc.statuses[k] ?? 0) + v;
        const c = await chatTurns(s.base, r);
        acc.turns.push(c);
        console.log(`round ${r + 1} ${exe}: probe p50 quiet ${pct(b.quiet, 0.5).toFixed(1)} / during bursts ${pct(b.during, 0.5).toFixed(1)} ms; ` +
                    `turns ${c.map((x) => `${x.ms.toFixed(0)} ms (${x.cached}/${x.prompt} cached)`).join(', ')}`);
      } finally {
        await stopServer(s);
      }
    }
  console.log('\n| binary | text probe p50 / p90, quiet | during bursts | burst answers | chat turn 1 | turns 2+ (median) |');
  console.log('|---|---|---|---|---|---|');
  for (const exe of exes) {
    const a = res[exe];
    const first = a.turns.map((c) => c[0].ms), later = a.turns.flatMap((c) => c.slice(1).map((x) => x.ms));
    console.log(`| ${exe} | ${pct(a.quiet, 0.5).toFixed(1)} / ${pct(a.quiet, 0.9).toFixed(1)} ms | ${pct(a.during, 0.5).toFixed(1)} / ` +
                `${pct(a.during, 0.9).toFixed(1)} ms | ${JSON.stringify(a.statuses)} | ${pct(first, 0.5).toFixed(0)} ms | ${pct(later, 0.5).toFixed(0)} ms |`);
  }
  process.exit(0);
}
