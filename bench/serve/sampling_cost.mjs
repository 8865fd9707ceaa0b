// node bench/serve/sampling_cost.mjs CAF_LAUNCH... [--rounds=N] [--streams=16] [--tokens=64]
//     [--echo=500,2000,4000]
// What sampling and scoring cost a server, side by side for each binary (embedded default, fresh
// each round, binaries taking turns round by round):
//   - decode: STREAMS concurrent legacy completions of TOKENS tokens (ignore_eos), greedy, at
//     temperature 0.8, at temperature 0.8 with top_p 0.9, and greedy with logprobs: 1 — aggregate
//     output tokens/s (the second of two passes, the first warming up);
//   - echo: one legacy completion with echo and logprobs: 1 of each prompt length (token ids),
//     max_tokens 1 — seconds for the whole answer (the prompt's tokens scored by a cold prefill).
// Prints a markdown table per round; medians over rounds at the end.
import { startEmbedded } from './embedded_server.mjs';

const args = process.argv.slice(2);
const bins = args.filter((a) => !a.startsWith('--'));
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const rounds = Number(opt('rounds', 2)), streams = Number(opt('streams', 16)), tokens = Number(opt('tokens', 64));
const echoLengths = opt('echo', '500,2000,4000').split(',').map(Number);
if (bins.length === 0) {
  console.error('usage: node bench/serve/sampling_cost.mjs CAF_LAUNCH... [--rounds=N] [--streams=N] [--tokens=N] [--echo=L,...]');
  process.exit(2);
}
const MODEL = 'deepseek-v4.1-flash';

const start = (exe) => startEmbedded(exe, '/tmp/sampling-kv-');

const complete = (base, body) => fetch(base + '/v1/completions', {
  method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, ...body }),
}).then(async (r) => {
  const j = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(j));
  return j;
});

async function decodeRate(base, extra) {
  let rate = 0;
  for (let pass = 0; pass < 2; ++pass) {
    const t0 = performance.now();
    const res = await Promise.all([...Array(streams).keys()].map((i) =>
      complete(base, { prompt: `Story number ${i}: once`, max_tokens: tokens, ignore_eos: true, seed: i, ...extra })));
    const n = res.reduce((a, r) => a + r.usage.completion_tokens, 0);
    rate = n / ((performance.now() - t0) / 1000);
  }
  return rate;
}

async function echoSeconds(base, length) {
  const prompt = Array.from({ length }, (_, i) => 1000 + ((i * 7919) % 120000));
  const t0 = performance.now();
  const r = await complete(base, { prompt, max_tokens: 1, logprobs: 1, echo: true, temperature: 0 });
  if (r.choices[0].logprobs.token_logprobs.length !== length + 1) throw new Error('not every prompt token was scored');
  return (performance.now() - t0) / 1000;
}

const results = new Map(bins.map((b) => [b, []]));
for (let round = 1; round <= rounds; ++round)
  for (const exe of bins) {
    const s = await start(exe);
    const row = {
      greedy: await decodeRate(s.base, { temperature: 0 }),
      sampled: await decodeRate(s.base, { temperature: 0.8 }),
      nucleus: await decodeRate(s.base, { temperature: 0.8, top_p: 0.9 }),
      logprobs: await decodeRate(s.base, { temperature: 0, logprobs: 1 }),
      echo: [],
    };
    // A binary without echo (before it was served) answers a 400: NaN.
    for (const l of echoLengths) row.echo.push(await echoSeconds(s.base, l).catch(() => NaN));
    await s.stop();
    results.get(exe).push(row);
    console.log(`round ${round} ${exe}: greedy ${row.greedy.toFixed(0)} / T=0.8 ${row.sampled.toFixed(0)} / top_p 0.9 ` +
                `${row.nucleus.toFixed(0)} / logprobs ${row.logprobs.toFixed(0)} tok/s;` +
                ` echo ${echoLengths.map((l, k) => `${l}: ${row.echo[k].toFixed(2)} s`).join(', ')}`);
  }
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`\n| binary | ${streams} streams x ${tokens} tokens, tok/s: greedy / temperature 0.8 / T 0.8 + top_p 0.9 / greedy + logprobs | echo + logprobs, s: ${echoLengths.join(' / ')} tokens |`);
console.log('|---|---|---|');
for (const [exe, rows] of results)
  console.log(`| ${exe} | ${median(rows.map((r) => r.greedy)).toFixed(0)} / ${median(rows.map((r) => r.sampled)).toFixed(0)} / ` +
              `${median(rows.map((r) => r.nucleus)).toFixed(0)} / ` +
              `${median(rows.map((r) => r.logprobs)).toFixed(0)} | ${echoLengths.map((_, k) => median(rows.map((r) => r.echo[k])).toFixed(2)).join(' / ')} |`);
