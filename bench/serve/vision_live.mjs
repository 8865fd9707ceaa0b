// bench/serve/vision_live.mjs: the vision balancer live (issue 21, acceptance 2). A loopback
// cluster of five processes (entrypoint, prefill, decode, two vision nodes of `cards` ranks each)
// serves a mixed image load under `[vision] balancer = "patches"` (the seeds' rule: a random
// vision node, then its rank with the fewest patches in flight) and under "round_robin", the
// policies alternating run by run in one invocation, so drift on a shared machine hits both.
// Each run: text-only probes alone (no image load), then the image load (Poisson arrivals, a
// `large-share` of `large`-pixel images among `small`-pixel ones, each a one-token chat) with
// the same text probes beside it. Measured: encoder queue time from the entrypoint's
// `deepinfer_vision_queue_seconds` (round trip to the vision rank less the encode: mailbox wait
// and transfer; p99 interpolated inside its buckets, mean exact), and the text probes' TTFT
// (client-side latency of a one-token, non-streamed answer) with and without the image load.
// Usage: node bench/serve/vision_live.mjs EXE [--runs=2] [--rate=6] [--seconds=40] [--idle-seconds=12]
//        [--large-share=0.05] [--large=1024] [--small=256] [--cards=2] [--probe-rate=2] [--keep]
//        [--priority=idle,10,0]: instead of the two policies, the patch rule with each CPU priority
//        of the vision ranks' encoder threads alternating run by run: `idle` is `[vision]
//        scheduling = "idle"` (SCHED_IDLE, the default), a number N is scheduling = "normal" with
//        `nice = N`. (`--nice=0,10` is the same as `--priority=0,10`.)
//        [--prefill-nodes=1]: prefill nodes of one rank each (p0, p1, ...), each its own instance
//        (the prefill balancer spreads prompts over them by remaining quota).
//        Several EXEs (`... EXE1 EXE2 --priority=idle`): the binaries take turns run by run.
//        [--after-seconds=0]: text probes alone again once every image is answered (drift check).
//        [--step-ms=100,25]: the prefill step budget (`[balancer.prefill] step_budget_ms`),
//        alternating run by run: how long a short prompt can wait behind a long one's step.
//        [--dump=FILE]: appends one JSON line per text probe (run, variant, phase alone/load, its
//        Server-Timing stages in ms and `outside`), for analysis past the summary's table.
//        [--repeat-images]: 16 small and 4 large images in turn instead of one per request.
//        [--layouts=shared,split,vision]: where the nodes run, alternating run by run: `shared`
//        (every node on every CPU), `split` (the vision nodes on --vision-cpus, default the last
//        CPU; every other node on --text-cpus, default the others: the manifest's `cpus`), the
//        seeds' vision machines of their own as far as one machine can give them; `vision` (the
//        vision nodes on --vision-cpus, the others on every CPU).
//        [--loads=images,text]: the load kinds, alternating run by run: `images` as above; `text`
//        its text twin: the same arrivals, each a text-only one-token chat of fresh words with as
//        many prompt tokens as the image request it stands for (the server's usage, measured at
//        start). The twin brings the image load's prefills without its encodes and its megabyte
//        bodies, so the two together split what image requests cost text requests.
// The summary gives, per variant, the mean over runs of each run's p50 change, and the change of
// the p50 over every probe of every run (pooled: less noise than one run's 40 probes alone); then
// where the probes' time went, alone and beside the load: each stage of the server's
// Server-Timing header (mean and p50, pooled), and `outside` (the client's time less the server's
// total). Stage means add up, so their changes place the probes' extra time.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

import { clusterManifest, freePort, manifestNode } from '../../tests/serve/harness.mjs';
import { dataUri, png } from '../../tests/serve/images.mjs';

// The image load runs this file again on a worker thread (imageLoadOnWorker) with the same arguments.
const argv = isMainThread ? process.argv.slice(2) : workerData.argv;
const opts = Object.fromEntries(argv.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exes = argv.filter((a) => !a.startsWith('--'));
if (exes.length === 0) {
  console.error('usage: node bench/serve/vision_live.mjs EXE [--runs=2] [--rate=6] [--seconds=40] ...');
  process.exit(2);
}
const runs = Number(opts.runs ?? 2), rate = Number(opts.rate ?? 6), seconds = Number(opts.seconds ?? 40);
const idleSeconds = Number(opts['idle-seconds'] ?? 12), largeShare = Number(opts['large-share'] ?? 0.05);
const large = Number(opts.large ?? 1024), small = Number(opts.small ?? 256), cards = Number(opts.cards ?? 2);
const probeRate = Number(opts['probe-rate'] ?? 2);
const afterSeconds = Number(opts['after-seconds'] ?? 0);
const prefillNodes = Math.max(1, Number(opts['prefill-nodes'] ?? 1));
const loads = (opts.loads ?? 'images').split(',');
for (const l of loads)
  if (l !== 'images' && l !== 'text') { console.error(`--loads: unknown load ${l} (images, text)`); process.exit(2); }
const MODEL = 'deepseek-v4.1-flash';
const layouts = (opts.layouts ?? 'shared').split(',');
for (const l of layouts)
  if (!['shared', 'split', 'vision'].includes(l)) { console.error(`--layouts: unknown layout ${l} (shared, split, vision)`); process.exit(2); }
// `--step-ms=100,25`: the prefill step budget (`[balancer.prefill] step_budget_ms`), alternating
// run by run; unset: the manifest's default.
const stepMsList = opts['step-ms'] ? opts['step-ms'].split(',') : [undefined];
const cpuCount = os.cpus().length;
const visionCpus = opts['vision-cpus'] ?? String(cpuCount - 1);
const textCpus = opts['text-cpus'] ?? (cpuCount > 1 ? `0-${cpuCount - 2}` : '0');

// A seeded stream, so every run sends the same images at the same offsets.
function rng(seed) {
  let x = seed >>> 0;
  return () => { x = (Math.imul(x, 1664525) + 1013904223) >>> 0; return x / 2 ** 32; };
}
// The load's arrivals and sizes, seeded: every run sends the same images at the same offsets. The
// images are made once by the main thread; the image load's worker gets them with its data.
function loadPlan() {
  const next = rng(42);
  const out = [];
  for (let at = 0; ;) {
    at += -Math.log(1 - next()) / rate;
    if (at > seconds) return out;
    out.push({ at, big: next() < largeShare });
  }
}
const plan = loadPlan();
// Every request its own image (`--repeat-images`: 16 small and 4 large ones in turn, as before
// 2026-12-05; since one-token prompts store their blocks, a repeated image's prompt hits the
// prefix cache and its prefill shrinks, which lightens the load).
const repeatImages = opts['repeat-images'] !== undefined;
const images = isMainThread ? (() => {
  if (!repeatImages)
    return plan.map((p, i) => dataUri(png(p.big ? large : small, p.big ? large : small, (p.big ? 20000 : 10000) + i)));
  const pool = { small: Array.from({ length: 16 }, (_, i) => dataUri(png(small, small, 1000 + i))),
                 large: Array.from({ length: 4 }, (_, i) => dataUri(png(large, large, 2000 + i))) };
  return plan.map((p, i) => pool[p.big ? 'large' : 'small'][i % (p.big ? 4 : 16)]);
})() : workerData.images;

// The `[vision]` lines of a priority variant ("idle" or a niceness; undefined: the default).
function priorityLines(priority) {
  if (priority === undefined) return '';
  return priority === 'idle' ? '\nscheduling = "idle"' : `\nscheduling = "normal"\nnice = ${Number(priority)}`;
}

async function start(policy, priority, exe, layout, stepMs) {
  const textLine = layout === 'split' ? `cpus = "${textCpus}"\n` : '';
  const visionLine = layout === 'split' || layout === 'vision' ? `cpus = "${visionCpus}"\n` : '';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-vision-live-'));
  const ports = [];
  for (let i = 0; i < 4 + prefillNodes; ++i) ports.push(await freePort());
  const http = await freePort();
  const manifest = path.join(dir, 'cluster.toml');
  const prefills = Array.from({ length: prefillNodes }, (_, i) => manifestNode(`p${i}`, ports[4 + i], ['prefill'], 'ranks = 1\n' + textLine));
  const text = clusterManifest(path.join(dir, 'kv'), [
    manifestNode('n0', ports[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${http}"\n` + textLine),
    ...prefills,
    manifestNode('d0', ports[1], ['decode'], 'ranks = 1\n' + textLine),
    manifestNode('v0', ports[2], ['vision'], `ranks = ${cards}\n` + visionLine),
    manifestNode('v1', ports[3], ['vision'], `ranks = ${cards}\n` + visionLine),
  ]).replace('log_level = "info"', `log_level = "${opts['log-level'] ?? 'warn'}"\n[vision]\nbalancer = "${policy}"` +
                                        priorityLines(priority) +
                                        (stepMs ? `\n[balancer.prefill]\nstep_budget_ms = ${Number(stepMs)}` : ''));
  fs.writeFileSync(manifest, text);
  const proc = spawn(exe, ['--manifest', manifest], { stdio: ['ignore', fs.openSync(path.join(dir, 'log'), 'w'), fs.openSync(path.join(dir, 'log'), 'a')] });
  const base = `http://127.0.0.1:${http}`;
  const t0 = Date.now();
  for (;;) {
    try {
      const m = await (await fetch(base + '/metrics')).text();
      const running = (instance) => new RegExp(`^deepinfer_instance_state\\{[^}]*instance="${instance}"[^}]*state="running"`, 'm').test(m);
      const up = ['v0', 'v1'].every((n) => m.includes(`deepinfer_instance_healthy_ranks{instance="${n}/vision"} ${cards}`) && running(`${n}/vision`)) &&
                 Array.from({ length: prefillNodes }, (_, i) => `p${i}/prefill`).every(running);
      if (up && (await chat(base, 'ping')).ok) break;
    } catch { /* not up yet */ }
    if (Date.now() - t0 > 180000) throw new Error(`the cluster did not come up within 180 s (log: ${dir}/log)`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { base, proc, dir };
}

async function stop(s) {
  s.proc.kill('SIGINT');
  await new Promise((r) => { s.proc.on('exit', r); setTimeout(() => { s.proc.kill('SIGKILL'); r(); }, 15000); });
  if ('keep' in opts) console.log(`kept ${s.dir}`);
  else fs.rmSync(s.dir, { recursive: true, force: true });
}

async function chat(base, content) {
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: 1, messages: [{ role: 'user', content }] }) });
  await r.arrayBuffer();
  return r;
}
async function promptTokens(base, content) {
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: 1, messages: [{ role: 'user', content }] }) });
  if (!r.ok) throw new Error(`calibration request: HTTP ${r.status}`);
  return (await r.json()).usage.prompt_tokens;
}
const QUESTION = 'What is this?';
// Fresh words (no prefix hit between requests): `n` of them for request `salt`.
const twinWords = (n, salt) => Array.from({ length: n }, (_, i) => `x${(i * 7919 + salt * 104729) % 99991}`).join(' ');
/// Words per twin prompt, small and large: an image request's prompt tokens (one request of each
/// size) matched by fresh words, from a two-point fit of tokens against words.
async function twinSizes(base) {
  const [t1, t2] = [await promptTokens(base, twinWords(100, 900001)), await promptTokens(base, twinWords(400, 900002))];
  const perWord = (t2 - t1) / 300, overhead = t1 - 100 * perWord;
  const words = async (side, seed) => {
    const tokens = await promptTokens(base, [{ type: 'image_url', image_url: { url: dataUri(png(side, side, seed)) } }, { type: 'text', text: QUESTION }]);
    return { tokens, words: Math.max(1, Math.round((tokens - overhead) / perWord)) };
  };
  return { small: await words(small, 990001), large: await words(large, 990002) };
}

/// The server's `Server-Timing` header as { stage: ms }.
function serverTiming(header) {
  const out = {};
  for (const part of (header ?? '').split(',')) {
    const m = part.trim().match(/^([A-Za-z0-9_]+);dur=([0-9.]+)$/);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

let probeSalt = 0;
/// Text-only probes at `probeRate`/s until `until()`: each a fresh short prompt (no prefix hit).
/// Gives each probe's client-side time (ms) and where the server says its time went: the stages
/// of its Server-Timing, plus `outside` (client time less the server's total: the client, the
/// loopback, the server's write of the answer).
async function probes(base, until) {
  const ttft = [];
  const stages = [];
  const inflight = [];
  while (!until()) {
    const s = ++probeSalt;
    const prompt = Array.from({ length: 24 }, (_, i) => `t${(i * 7919 + s * 104729) % 99991}`).join(' ');
    inflight.push((async () => {
      const t = performance.now();
      const r = await chat(base, prompt);
      if (!r.ok) return;
      const ms = performance.now() - t;
      ttft.push(ms);
      const st = serverTiming(r.headers.get('server-timing'));
      if (st.total !== undefined) stages.push({ ...st, outside: Math.max(0, ms - st.total) });
    })());
    await new Promise((r) => setTimeout(r, 1000 / probeRate));
  }
  await Promise.all(inflight);
  return { ttft, stages };
}

/// Per stage, mean and p50 (ms) of the probes alone and beside the load, pooled over `runs`: the
/// means add up (the stages sum to the total), so their changes say where the probes' extra time
/// went.
function stageTable(runs) {
  const alone = runs.flatMap((m) => m.idle_stages), busy = runs.flatMap((m) => m.busy_stages);
  if (alone.length === 0 || busy.length === 0) return '  (no Server-Timing on the probes\' answers)';
  const names = [...new Set([...alone, ...busy].flatMap((x) => Object.keys(x)))];
  const col = (xs, k) => xs.map((x) => x[k] ?? 0);
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rows = names.map((k) => {
    const a = col(alone, k), b = col(busy, k);
    return `  | ${k} | ${mean(a).toFixed(3)} / ${pct(a, 0.5).toFixed(3)} | ${mean(b).toFixed(3)} / ${pct(b, 0.5).toFixed(3)} | ` +
           `${(mean(b) - mean(a) >= 0 ? '+' : '')}${(mean(b) - mean(a)).toFixed(3)} |`;
  });
  return [`  | stage (${alone.length} / ${busy.length} probes) | alone mean / p50 ms | with the load mean / p50 ms | mean change ms |`,
          '  |---|---|---|---|', ...rows].join('\n');
}

/// The image load: Poisson arrivals at `rate`/s for `seconds`, each a one-token chat with one image
/// (with `twin`, words per small and large twin: each a text-only chat of that many fresh words).
async function imageLoad(base, twin) {
  const sent = [];
  const t0 = performance.now();
  let failed = 0, nLarge = 0;
  const smallMs = [], largeMs = [];
  for (let i = 0; i < plan.length; ++i) {
    const { at, big } = plan[i];
    nLarge += big ? 1 : 0;
    const img = images[i];
    const wait = t0 + at * 1000 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    const content = twin ? `${twinWords(big ? twin.large.words : twin.small.words, 500000 + i)} ${QUESTION}`
                         : [{ type: 'image_url', image_url: { url: img } }, { type: 'text', text: QUESTION }];
    sent.push(chat(base, content)
      .then((r) => { if (!r.ok) ++failed; else (big ? largeMs : smallMs).push(performance.now() - t); }, () => { ++failed; }));
  }
  await Promise.all(sent);
  return { images: sent.length, large: nLarge, failed, small_p50: pct(smallMs, 0.5), small_p99: pct(smallMs, 0.99),
           large_p50: pct(largeMs, 0.5) };
}

/// `imageLoad` on a worker thread of its own, as another client would send it: its request bodies
/// (megabytes of JSON each) are built and sent on another event loop than the probes', which
/// would otherwise wait behind them and time the client instead of the server.
function imageLoadOnWorker(base, twin) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { argv, base, images, twin } });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => { if (code !== 0) reject(new Error(`the image load's worker exited with ${code}`)); });
  });
}

/// The histogram `name` (no labels) from /metrics: [upper bound, cumulative count] pairs, sum, count.
async function histogram(base, name) {
  const text = await (await fetch(base + '/metrics')).text();
  const buckets = [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))]
    .map((m) => [m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  const num = (k) => Number(text.match(new RegExp(`^${name}_${k}(?:\\{\\})? (\\S+)$`, 'm'))?.[1] ?? 0);
  return { buckets, sum: num('sum'), count: num('count') };
}
function minus(a, b) {
  return { buckets: a.buckets.map(([le, c], i) => [le, c - (b.buckets[i]?.[1] ?? 0)]), sum: a.sum - b.sum, count: a.count - b.count };
}
function quantile(h, q) {
  const rank = q * h.count;
  let lo = 0, below = 0;
  for (const [le, c] of h.buckets) {
    if (c >= rank) return le === Infinity ? lo : lo + (le - lo) * (c === below ? 0 : (rank - below) / (c - below));
    [lo, below] = [le, c];
  }
  return lo;
}
const pct = (xs, q) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))]; };

async function measure({ policy, priority, exe, load, layout, stepMs }) {
  const s = await start(policy, priority, exe, layout, stepMs);
  try {
    const twin = load === 'text' ? await twinSizes(s.base) : undefined;
    // 1. Text alone.
    let idleEnd = performance.now() + idleSeconds * 1000;
    const { ttft: idle, stages: idleStages } = await probes(s.base, () => performance.now() > idleEnd);
    // 2. Images, with the same probes beside them.
    const before = await histogram(s.base, 'deepinfer_vision_queue_seconds');
    let loading = true;
    const [sent, { ttft: busy, stages: busyStages }] =
      await Promise.all([imageLoadOnWorker(s.base, twin).finally(() => { loading = false; }), probes(s.base, () => !loading)]);
    const q = minus(await histogram(s.base, 'deepinfer_vision_queue_seconds'), before);
    // 3. Text alone again (`--after-seconds`, default 0): every image is answered by now, so this
    // tells drift over the run from the image load's effect.
    const afterEnd = performance.now() + afterSeconds * 1000;
    const after = afterSeconds > 0 ? (await probes(s.base, () => performance.now() > afterEnd)).ttft : [];
    const label = (priority === undefined ? policy : `${policy} ${priority === 'idle' ? 'idle' : `nice=${priority}`}`) +
                  (exes.length > 1 ? ` ${exe}` : '') +
                  (layouts.length > 1 || layout !== 'shared'
                    ? { shared: ' shared', split: ` split (text on CPUs ${textCpus}, vision on ${visionCpus})`,
                        vision: ` vision on CPUs ${visionCpus}, text on all` }[layout] : '') +
                  (stepMs ? ` step ${stepMs} ms` : '') +
                  (twin ? ` text twin (${twin.small.tokens} / ${twin.large.tokens} tokens: ${twin.small.words} / ${twin.large.words} words)` : '');
    return { policy: label, idle, busy, after, idle_stages: idleStages, busy_stages: busyStages, after_p50: after.length ? pct(after, 0.5) : NaN, ...sent, queue_p50: quantile(q, 0.5), queue_p99: quantile(q, 0.99), queue_mean: q.sum / Math.max(1, q.count),
             queued: q.count, idle_p50: pct(idle, 0.5), idle_p90: pct(idle, 0.9), busy_p50: pct(busy, 0.5), busy_p90: pct(busy, 0.9),
             probes: [idle.length, busy.length] };
  } finally {
    await stop(s);
  }
}

if (!isMainThread) {
  parentPort.postMessage(await imageLoad(workerData.base, workerData.twin));
} else {
  console.log(`# vision live: 2 vision nodes x ${cards} ranks, ${prefillNodes} prefill node(s), ${rate} images/s for ${seconds} s, ${Math.round(largeShare * 100)} % ${large}x${large} ` +
              `among ${small}x${small}, text probes ${probeRate}/s; ${os.cpus()[0]?.model} x ${os.cpus().length}`);
  console.log('| run | policy | images (large, failed) | queue p50 | queue p99 | queue mean | small-image answer p50 / p99 | large p50 | text TTFT p50 / p90 alone | with images | p50 change |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  const all = [];
  const priorities = opts.priority ?? opts.nice;
  const variants = (priorities ? priorities.split(',').map((p) => ({ policy: 'patches', priority: p }))
                               : [{ policy: 'patches' }, { policy: 'round_robin' }])
    .flatMap((v) => exes.map((exe) => ({ ...v, exe })))
    .flatMap((v) => loads.map((load) => ({ ...v, load })))
    .flatMap((v) => layouts.map((layout) => ({ ...v, layout })))
    .flatMap((v) => stepMsList.map((stepMs) => ({ ...v, stepMs })));
  for (let r = 0; r < runs; ++r)
    for (const v of variants) {
      const m = await measure(v);
      all.push(m);
      if (opts.dump)
        for (const [phase, xs] of [['alone', m.idle_stages], ['load', m.busy_stages]])
          for (const x of xs) fs.appendFileSync(opts.dump, JSON.stringify({ run: r + 1, variant: m.policy, phase, ...x }) + '\n');
      const ms = (x) => `${(x * 1000).toFixed(1)} ms`;
      console.log(`| ${r + 1} | ${m.policy} | ${m.images} (${m.large}, ${m.failed}) | ${ms(m.queue_p50)} | ${ms(m.queue_p99)} | ${ms(m.queue_mean)} | ` +
                  `${m.small_p50.toFixed(0)} / ${m.small_p99.toFixed(0)} ms | ${m.large_p50?.toFixed(0)} ms | ` +
                  `${m.idle_p50.toFixed(1)} / ${m.idle_p90.toFixed(1)} ms | ${m.busy_p50.toFixed(1)} / ${m.busy_p90.toFixed(1)} ms | ` +
                  `${((m.busy_p50 / m.idle_p50 - 1) * 100).toFixed(1)} % |`);
    }
  const mean = (p, k) => { const xs = all.filter((m) => m.policy === p).map((m) => m[k]); return xs.reduce((a, b) => a + b, 0) / xs.length; };
  const names = [...new Set(all.map((m) => m.policy))];
  if (!priorities)
    console.log(`\nqueue p99 patches / round robin (mean over runs): ${(mean('patches', 'queue_p99') / mean('round_robin', 'queue_p99')).toFixed(2)}x ` +
                `(goal <= 0.7x); queue mean: ${(mean('patches', 'queue_mean') / mean('round_robin', 'queue_mean')).toFixed(2)}x`);
  for (const p of names) {
    const pooled = (k) => pct(all.filter((m) => m.policy === p).flatMap((m) => m[k]), 0.5);
    console.log(`text TTFT p50 with images / alone, ${p}: ${((mean(p, 'busy_p50') / mean(p, 'idle_p50') - 1) * 100).toFixed(1)} % ` +
                `(mean of the runs), ${((pooled('busy') / pooled('idle') - 1) * 100).toFixed(1)} % (pooled: ${pooled('busy').toFixed(2)} / ` +
                `${pooled('idle').toFixed(2)} ms) (goal within +5 %)`);
    if (afterSeconds > 0) {
      const both = pct(all.filter((m) => m.policy === p).flatMap((m) => [...m.idle, ...m.after]), 0.5);
      console.log(`  alone again after the images, pooled p50 ${pooled('after').toFixed(2)} ms (before ${pooled('idle').toFixed(2)}); ` +
                  `with images / alone before and after: ${((pooled('busy') / both - 1) * 100).toFixed(1)} %`);
    }
    console.log(`  where the probes' time went, ${p} (the server's Server-Timing; outside = client time less its total):`);
    console.log(stageTable(all.filter((m) => m.policy === p)));
  }
}
