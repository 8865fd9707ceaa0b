// bench/serve/ttft.mjs: TTFT and aggregate tokens/s of the embedded default against 1..N
// concurrent streams, and TTFT of a long prompt cold (fresh KV root) vs hot (same prompt again,
// served from the prefix cache).
// Usage: node bench/serve/ttft.mjs build/launcher/caf-launch [max_concurrency=64] [long_words=15000]
// SERVER_ARGS="--cpu-isa avx2" passes extra flags to the server (e.g. to compare ISAs on one machine).
import { serverUp, startServer, stopServer } from '../../tests/serve/harness.mjs';
import { streamTimed } from './stream_ttft.mjs';

const [exe, maxConc = '64', longWords = '15000'] = process.argv.slice(2);
const MODEL = 'deepseek-v4.1-flash';
const extra = (process.env.SERVER_ARGS ?? '').split(' ').filter(Boolean);
const server = await startServer(exe, { flags: extra, kvPrefix: 'deepinfer-bench-kv-' });
const base = server.base;
await serverUp(server);

const stream = (content, maxTokens) => streamTimed(base, MODEL, content, maxTokens);
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
await stopServer(server);
