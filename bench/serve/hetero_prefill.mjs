// bench/serve/hetero_prefill.mjs: a closed-loop load of fresh prompts against a running server
// (e.g. a manifest whose prefill nodes differ: bench/serve/configs/hetero_prefill.toml), then the
// prefill balancer's placements per instance from the controller's /metrics.
// Usage: node bench/serve/hetero_prefill.mjs BASE [REQUESTS=40] [STREAMS=4] [WORDS=1500]
import { streamTtft } from './stream_ttft.mjs';

const [base, requests = '40', streams = '4', nwords = '1500'] = process.argv.slice(2);
if (!base) {
  console.error('usage: node bench/serve/hetero_prefill.mjs BASE [REQUESTS] [STREAMS] [WORDS]');
  process.exit(2);
}
let salt = Math.floor(Math.random() * 1e6); // fresh words every run: no prefix hit
const words = (n) => { const s = ++salt; return Array.from({ length: n }, (_, i) => `w${(i * 7919 + s * 104729) % 99991}`).join(' '); };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ttfts = [];
let next = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(streams) }, async () => {
  while (next < Number(requests)) {
    next++;
    ttfts.push(await streamTtft(base, 'deepseek-v4.1-flash', words(Number(nwords)), 4));
  }
}));
const seconds = (performance.now() - t0) / 1000;
const metrics = await (await fetch(base + '/metrics')).text();
console.log(JSON.stringify({ ttft_p50_ms: Math.round(pct(ttfts, 0.5)), ttft_p90_ms: Math.round(pct(ttfts, 0.9)),
                             ttft_p99_ms: Math.round(pct(ttfts, 0.99)),
                             ttft_mean_ms: Math.round(ttfts.reduce((a, b) => a + b) / ttfts.length),
                             seconds: Number(seconds.toFixed(1)) }));
console.log(metrics.split('\n').filter((l) => l.startsWith('deepinfer_prefill_router_placed_total')).join('\n'));
