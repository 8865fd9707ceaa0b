// bench/serve/mixed_load.mjs: TTFT percentiles of a mixed-length load (short prompts arriving
// behind long ones) at 1..64 concurrent streams, for each caf-launch binary given, side by side
// in one run (the binaries take turns per concurrency level, so machine noise hits both alike).
// Usage: node bench/serve/mixed_load.mjs EXE [EXE...] [--streams=1,4,16,64] [--requests=48]
//        [--long-words=6000] [--long-every=6] [--max-tokens=16] [--seed=12345] [--seeds=1,2,3,4]
//        [--dump=FILE] [--cpu]
// Each stream sends requests back to back; every `long-every`-th request of a stream is long
// (fresh words, so no prefix hit), the rest short. Prints one row per (binary, streams).
// With --rates=R1,R2 the load is open instead: `requests` arrivals at R requests/s (Poisson, the
// same seeded sequence for every binary), every `long-every`-th long, whatever the answers' pace
// (in a closed loop faster short prompts bring the next long ones in sooner). With --seeds the
// open loop runs each arrival sequence in turn (binaries alternating per sequence and rate), then
// prints each binary's percentiles over all of them pooled: p99 over 4 x 48 long prompts is the
// 2nd largest of 192, not the largest of 48. With several binaries it then prints each one's
// pooled p99 as a ratio to the first binary's, with a 90 % interval from the sequences resampled.
// --dump=FILE appends one JSON line per request (binary, level, index, start and TTFT in ms, long)
// for a look at which requests make the tail. --cpu prints, after each row, the server's CPU
// seconds over the level by thread name (Linux /proc), e.g. prefill ranks against the rest.
// Each server's KV root is made under os.tmpdir(): `TMPDIR=/dev/shm` keeps the block files'
// creation out of the figures (on ext4 without a journal it costs CPU that grows with the files
// earlier runs deleted; bench/RESULTS.md, "the mixed-length load on a tmpfs KV root").
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';
import { streamTtft } from './stream_ttft.mjs';

const opts = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exes = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (exes.length === 0) {
  console.error('usage: node bench/serve/mixed_load.mjs EXE [EXE...] [--streams=1,4,16,64] [--requests=48]');
  process.exit(2);
}
const streamsList = (opts.streams ?? '1,4,16,64').split(',').map(Number);
const requests = Number(opts.requests ?? 48);
const longWords = Number(opts['long-words'] ?? 6000);
const longEvery = Number(opts['long-every'] ?? 6);
const maxTokens = Number(opts['max-tokens'] ?? 16);
// The open loop's arrival sequences (seeds of its arrival times).
const seeds = (opts.seeds ?? opts.seed ?? '12345').split(',').map(Number);
const MODEL = 'deepseek-v4.1-flash';

async function start(exe) {
  const s = await startServer(exe, { name: exe, kvPrefix: 'deepinfer-mixed-kv-' });
  await serverUp(s);
  return s;
}

const ttft = (base, content) => streamTtft(base, MODEL, content, maxTokens);

let salt = 0;
const words = (n) => { const s = ++salt; return Array.from({ length: n }, (_, i) => `w${(i * 7919 + s * 104729) % 99991}`).join(' '); };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN; };

// Seeded exponential gaps: every binary sees the same arrival times.
function arrivals(rate, seed) {
  let x = seed; const out = []; let t = 0;
  for (let i = 0; i < requests; ++i) {
    x = (x * 1103515245 + 12345) % 2147483648;
    t += -Math.log(1 - x / 2147483648) / rate * 1000;
    out.push(t);
  }
  return out;
}

// CPU seconds (user + system) of each thread of process `pid`, keyed by thread id.
function threadCpu(pid) {
  const out = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' '); // fields from the 3rd (state) on
      out.set(tid, { name: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')), s: (Number(f[11]) + Number(f[12])) / 100 });
    } catch { /* the thread ended */ }
  }
  return out;
}
// `after` less `before` by thread name, largest first, with the busiest threads of each name:
// "prefill/r0 4.1 s (4.1), kv.writer 0.6 s (0.6), ..." (threads are named for their role:
// recipe/base/thread_name.hpp; a binary from before that shows its ranks as "caf.actor").
function cpuByName(before, after) {
  const by = new Map();
  for (const [tid, t] of after) {
    const d = t.s - (before.get(tid)?.s ?? 0);
    if (d > 0.05)
      by.set(t.name, [...(by.get(t.name) ?? []), d]);
  }
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  return [...by].sort((a, b) => sum(b[1]) - sum(a[1]))
    .map(([name, xs]) => `${name} ${sum(xs).toFixed(1)} s (${xs.sort((a, b) => b - a).slice(0, 6).map((x) => x.toFixed(1)).join(' ')})`)
    .join(', ');
}

const dump = opts.dump ?? null;
const record = (row) => { if (dump) appendFileSync(dump, JSON.stringify(row) + '\n'); };

async function runOpen(base, rate, exe, seed) {
  const short = []; const long = [];
  const t0 = performance.now();
  await Promise.all(arrivals(rate, seed).map(async (at, i) => {
    await new Promise((r) => setTimeout(r, Math.max(0, at - (performance.now() - t0))));
    const isLong = i % longEvery === 0;
    const start = performance.now() - t0;
    const ms = await ttft(base, isLong ? words(longWords) : `${words(40)} Answer briefly.`);
    (isLong ? long : short).push(ms);
    record({ exe, rate, seed, i, start: Math.round(start), ttft: Math.round(ms), long: isLong });
  }));
  return { short, long, seconds: (performance.now() - t0) / 1000 };
}

// Stream s sends requests s, s + streams, ... (a fixed share, so every binary computes the same
// mix: when streams took the next request as they came free, faster short answers let some
// streams take more requests, and with them more long ones).
async function run(base, streams, exe) {
  const short = []; const long = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: streams }, async (_, sIdx) => {
    for (let k = 0; ; ++k) {
      const i = sIdx + k * streams;
      if (i >= requests) return;
      const isLong = (k + sIdx) % longEvery === 0;
      const start = performance.now() - t0;
      const ms = await ttft(base, isLong ? words(longWords) : `${words(40)} Answer briefly.`);
      (isLong ? long : short).push(ms);
      record({ exe, streams, i, start: Math.round(start), ttft: Math.round(ms), long: isLong });
    }
  }));
  return { short, long, seconds: (performance.now() - t0) / 1000 };
}

const rates = opts.rates ? opts.rates.split(',').map(Number) : null;
const levels = rates ?? streamsList;
console.log(`mixed load: ${requests} requests per level, every ${longEvery}th ${rates ? '' : 'of a stream '}long (${longWords} words), max_tokens ${maxTokens}` +
            (rates ? ', open loop (arrivals at a fixed rate)' : ''));
const several = rates && seeds.length > 1;
console.log(`| binary | ${rates ? 'arrivals/s' : 'streams'}${several ? ' | seed' : ''} | short TTFT p50 / p99 ms | long TTFT p50 / p99 ms | requests/s |`);
console.log(several ? '|---|---|---|---|---|---|' : '|---|---|---|---|---|');
const pooled = new Map(); // "exe level" -> { short, long }
for (const seed of rates ? seeds : [0])
  for (const streams of levels)
    for (const exe of exes) {
      const s = await start(exe);
      try {
        await ttft(s.base, 'warm up'); // model pages in, first-request costs out of the figures
        const cpu0 = 'cpu' in opts ? threadCpu(s.proc.pid) : null;
        const r = rates ? await runOpen(s.base, streams, exe, seed) : await run(s.base, streams, exe);
        const f = (xs) => `${pct(xs, 0.5).toFixed(0)} / ${pct(xs, 0.99).toFixed(0)}`;
        console.log(`| ${exe} | ${streams}${several ? ` | ${seed}` : ''} | ${f(r.short)} | ${f(r.long)} | ${(requests / r.seconds).toFixed(2)} |`);
        if (cpu0)
          console.log(`  cpu: ${cpuByName(cpu0, threadCpu(s.proc.pid))}`);
        const key = `${exe} ${streams}`;
        const p = pooled.get(key) ?? { exe, level: streams, short: [], long: [], bySeed: [] };
        p.short.push(...r.short);
        p.long.push(...r.long);
        p.bySeed.push({ short: r.short, long: r.long });
        pooled.set(key, p);
      } finally {
        await stopServer(s);
      }
    }
if (several) {
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const f = (xs) => [0.5, 0.9, 0.95, 0.99].map((q) => pct(xs, q).toFixed(0)).join(' / ') + ` (mean ${mean(xs).toFixed(0)}, n ${xs.length})`;
  console.log(`\npooled over seeds ${seeds.join(', ')}:`);
  console.log('| binary | arrivals/s | short TTFT p50 / p90 / p95 / p99 ms | long TTFT p50 / p90 / p95 / p99 ms |');
  console.log('|---|---|---|---|');
  for (const level of levels)
    for (const exe of exes) {
      const p = pooled.get(`${exe} ${level}`);
      console.log(`| ${exe} | ${level} | ${f(p.short)} | ${f(p.long)} |`);
    }
  // How sure the p99 ratios are: the arrival sequences resampled with replacement (each binary
  // ran the same sequences, so a resample keeps the pairs), the pooled p99 ratio of each
  // resample; the 5th and 95th percentile of 2000 resamples bound a 90 % interval. Sequences,
  // not requests, are resampled: requests of one sequence share its queues.
  if (exes.length > 1) {
    console.log(`\np99 against ${exes[0]}, pooled, with a 90 % interval over the ${seeds.length} sequences resampled:`);
    console.log('| binary | arrivals/s | short p99 ratio [90 %] | long p99 ratio [90 %] |');
    console.log('|---|---|---|---|');
    let x = 987654321;
    const rand = () => { x = (x * 1103515245 + 12345) % 2147483648; return x / 2147483648; };
    for (const level of levels) {
      const ref = pooled.get(`${exes[0]} ${level}`);
      for (const exe of exes.slice(1)) {
        const p = pooled.get(`${exe} ${level}`);
        const ratios = { short: [], long: [] };
        for (let b = 0; b < 2000; ++b) {
          const pick = seeds.map(() => Math.floor(rand() * seeds.length));
          for (const kind of ['short', 'long']) {
            const mine = pick.flatMap((k) => p.bySeed[k][kind]);
            const theirs = pick.flatMap((k) => ref.bySeed[k][kind]);
            ratios[kind].push(pct(mine, 0.99) / pct(theirs, 0.99));
          }
        }
        const g = (kind) => `${(pct(p[kind], 0.99) / pct(ref[kind], 0.99)).toFixed(3)} [${pct(ratios[kind], 0.05).toFixed(3)}, ${pct(ratios[kind], 0.95).toFixed(3)}]`;
        console.log(`| ${exe} | ${level} | ${g('short')} | ${g('long')} |`);
      }
    }
  }
}
