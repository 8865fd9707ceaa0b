// bench/serve/short_behind_long.mjs: TTFT of a short prompt sent while a long one is being
// prefilled (one prefill rank takes both: the embedded default has 2, so two longs go first to
// fill both), for each caf-launch binary given, side by side in one run.
// Usage: node bench/serve/short_behind_long.mjs EXE [EXE...] [--long-words=6000] [--rounds=3]
import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';
import { streamTtft } from './stream_ttft.mjs';

const opts = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exes = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const longWords = Number(opts['long-words'] ?? 6000);
const rounds = Number(opts.rounds ?? 3);
const MODEL = 'deepseek-v4.1-flash';

const ttft = (base, content) => streamTtft(base, MODEL, content, 2);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const words = (n, seed) => Array.from({ length: n }, (_, i) => `w${(i * 7919 + seed * 104729) % 1009}`).join(' ');

console.log(`| binary | long TTFT ms (median of ${rounds}) | short TTFT behind it ms | short alone ms |`);
console.log('|---|---|---|---|');
for (const exe of exes) {
  const server = await startServer(exe, { name: exe, kvPrefix: 'deepinfer-bench-kv-' });
  const base = server.base;
  await serverUp(server);
  await ttft(base, 'Warm up.');
  const longs = []; const shorts = []; const alone = [];
  for (let i = 0; i < rounds; ++i) {
    alone.push(await ttft(base, `Short question ${i}a.`));
    // Fresh words each round: no prefix hit.
    const l = [ttft(base, words(longWords, 2 * i + 1)), ttft(base, words(longWords, 2 * i + 2))];
    await new Promise((r) => setTimeout(r, 300));
    shorts.push(await ttft(base, `Short question ${i}b.`));
    longs.push(...await Promise.all(l));
  }
  console.log(`| ${exe} | ${median(longs).toFixed(0)} | ${median(shorts).toFixed(0)} | ${median(alone).toFixed(0)} |`);
  await stopServer(server);
}
