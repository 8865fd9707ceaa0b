// bench/serve/short_behind_long.mjs: TTFT of short prompts sent while long ones are being
// prefilled, for each caf-launch binary given, side by side in one run (every server is started
// first and the binaries take turns round by round, so machine noise hits them alike).
// Usage: node bench/serve/short_behind_long.mjs EXE [EXE...] [--long-words=6000] [--rounds=3] [--longs=2]
//        [--hit] [--delay-ms=20] [--drop-caches]
// Each round sends `longs` long prompts at once (fresh words: no prefix hit), then short prompts
// one after another until the longs have their first tokens. With --longs=2 (the default) both
// prefill ranks of the embedded default hold a long prompt, so a short one waits behind a long
// one on its rank; with --longs=1 the other rank is free, and a short prompt there waits only
// for the expert-parallel group's step the long prompt's chunk runs in (issue 15).
// With --hit the long prompts are the same every round (a warm-up round, not counted, stores
// them), so each is a ~99 % prefix hit whose blocks the rank's fetcher reads while the short
// prompts, sent `delay-ms` after them, need their own hit plans from it. --drop-caches (root)
// empties the page cache before every round, so those reads come from the disk, as a block
// kept for days on a store would.
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';
import { streamTtft } from './stream_ttft.mjs';

const opts = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exes = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const longWords = Number(opts['long-words'] ?? 6000);
const rounds = Number(opts.rounds ?? 3);
const longCount = Number(opts.longs ?? 2);
const hit = 'hit' in opts;
const delayMs = Number(opts['delay-ms'] ?? 20);
const dropCaches = () => { execSync('sync'); fs.writeFileSync('/proc/sys/vm/drop_caches', '1'); };
const MODEL = 'deepseek-v4.1-flash';

const ttft = (base, content) => streamTtft(base, MODEL, content, 2);
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
let seed = 0;
const words = (n) => { const s = ++seed; return Array.from({ length: n }, (_, i) => `w${(i * 7919 + s * 104729) % 99991}`).join(' '); };

const servers = [];
try {
  for (const exe of exes) {
    const s = await startServer(exe, { name: exe, kvPrefix: 'deepinfer-bench-kv-' });
    servers.push(s);
    await serverUp(s);
    await ttft(s.base, 'Warm up.');
  }
  const results = exes.map(() => ({ longs: [], shorts: [], alone: [] }));
  // With --hit every server gets the same long texts every round.
  const hitTexts = Array.from({ length: longCount }, () => words(longWords));
  for (let i = hit ? -1 : 0; i < rounds; ++i)
    for (const [k, s] of servers.entries()) {
      const r = i < 0 ? { longs: [], shorts: [], alone: [] } : results[k]; // the warm-up round is not counted
      r.alone.push(await ttft(s.base, `${words(40)} Answer briefly.`));
      if ('drop-caches' in opts)
        dropCaches();
      let pending = longCount;
      const longs = Array.from({ length: longCount }, (_, j) => ttft(s.base, hit ? hitTexts[j] : words(longWords))
        .then((ms) => { --pending; r.longs.push(ms); }));
      await new Promise((res) => setTimeout(res, delayMs));
      while (pending > 0)
        r.shorts.push(await ttft(s.base, `${words(40)} Answer briefly.`));
      await Promise.all(longs);
      if (hit)
        await new Promise((res) => setTimeout(res, 300)); // the decode side stores the blocks
    }
  console.log(`${longCount} long prompt(s) of ${longWords} words${hit ? ' (prefix hits)' : ''}, short ones back to back `
              + `beside them from ${delayMs} ms on; ${rounds} rounds`);
  console.log('| binary | long TTFT p50 ms | short TTFT beside them p50 / p90 ms (count) | short alone p50 ms |');
  console.log('|---|---|---|---|');
  for (const [k, exe] of exes.entries()) {
    const r = results[k];
    console.log(`| ${exe} | ${pct(r.longs, 0.5).toFixed(0)} | ${pct(r.shorts, 0.5).toFixed(0)} / ${pct(r.shorts, 0.9).toFixed(0)} (${r.shorts.length}) | ${pct(r.alone, 0.5).toFixed(0)} |`);
  }
} finally {
  for (const s of servers)
    await stopServer(s);
}
