// bench/serve/ep_live.mjs: expert parallelism under the serve load, live (issue 16). For each
// setup (EP 1, 2, 4 with re-placement, and EP 4 without), one single-process server from a
// manifest serves the same load: `streams` concurrent non-streamed greedy chat completions of
// `max-tokens` tokens each, fresh prompts (no prefix hit), `rounds` rounds back to back. Read from
// the server itself: decode tokens/s (generated tokens / wall time of the load), the decode
// instance's moe_lb (`deepinfer_moe_lb`, sampled every 250 ms after the first quarter of the
// load), its all-to-all time per step (`deepinfer_ep_exchange_seconds` sum / count), its
// re-placements, and each rank's routed-expert bytes (`GET /admin/instances`).
// Usage: node bench/serve/ep_live.mjs EXE [--streams=16] [--rounds=3] [--max-tokens=96]
//        [--window=50] [--replace=50] [--setups=1,2,4-off,4]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { freePort, singleNodeManifest } from '../../tests/serve/harness.mjs';

const opts = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')));
const exe = process.argv.slice(2).find((a) => !a.startsWith('--'));
if (!exe) {
  console.error('usage: node bench/serve/ep_live.mjs EXE [--streams=16] [--rounds=3] [--max-tokens=96]');
  process.exit(2);
}
const streams = Number(opts.streams ?? 16), rounds = Number(opts.rounds ?? 3), maxTokens = Number(opts['max-tokens'] ?? 96);
const window = Number(opts.window ?? 50), replace = Number(opts.replace ?? 50);
const setups = (opts.setups ?? '1,2,4-off,4').split(',');
const MODEL = 'deepseek-v4.1-flash';


async function start(ranks, replaceSteps) {
  const [http, port] = [await freePort(), await freePort()];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-ep-live-'));
  const manifest = path.join(dir, 'm.toml');
  fs.writeFileSync(manifest, singleNodeManifest({ kvRoot: path.join(dir, 'kv'), port, http, ranks, logLevel: 'warn',
                                                tables: `[balancer.decode]
redundant_experts_per_rank = 1
ep_window_steps = ${window}
ep_replace_steps = ${replaceSteps}` }));
  const proc = spawn(exe, ['--manifest', manifest], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${http}`;
  const deadline = Date.now() + 120000;
  for (;;) {
    try { if ((await fetch(base + '/health')).ok && (await metric(base, 'deepinfer_instance_ep_size')) === ranks) break; } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`the EP ${ranks} server did not come up within 120 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, proc, dir };
}

async function metrics(base) { return (await fetch(base + '/metrics')).text(); }
function sample(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{instance="local/decode"}`) || l.startsWith(`${name}{instance="local/decode",`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}
async function metric(base, name) { return sample(await metrics(base), name); }

let salt = 0;
const prompt = () => { const s = ++salt; return Array.from({ length: 40 + (s * 37) % 160 }, (_, i) => `q${(i * 7919 + s * 104729) % 99991}`).join(' '); };

async function complete(base) {
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: maxTokens, messages: [{ role: 'user', content: prompt() }] }) });
  const j = await r.json();
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${JSON.stringify(j)}`);
  return j.usage.completion_tokens;
}

async function measure(setup) {
  const ranks = Number(setup.split('-')[0]);
  const off = setup.endsWith('-off');
  const s = await start(ranks, off ? 1 << 30 : replace);
  try {
    salt = 0; // every setup serves the same prompts
    const before = await metrics(s.base);
    const lbs = [];
    let done = false;
    const t0 = performance.now();
    const sampler = (async () => {
      while (!done) {
        await new Promise((r) => setTimeout(r, 250));
        const v = await metric(s.base, 'deepinfer_moe_lb');
        if (v !== undefined && v >= 1) lbs.push([performance.now() - t0, v]); // < 1: before the group's first step
      }
    })();
    let tokens = 0;
    for (let k = 0; k < rounds; k++)
      tokens += (await Promise.all(Array.from({ length: streams }, () => complete(s.base)))).reduce((a, b) => a + b, 0);
    const wall = (performance.now() - t0) / 1000;
    done = true;
    await sampler;
    const after = await metrics(s.base);
    const count = sample(after, 'deepinfer_ep_exchange_seconds_count') - (sample(before, 'deepinfer_ep_exchange_seconds_count') ?? 0);
    const sum = sample(after, 'deepinfer_ep_exchange_seconds_sum') - (sample(before, 'deepinfer_ep_exchange_seconds_sum') ?? 0);
    const late = lbs.filter(([t]) => t > wall * 250);
    const inst = (await (await fetch(s.base + '/admin/instances')).json()).data.find((i) => i.instance === 'local/decode');
    return {
      setup, ranks, off, tokens, wall,
      tps: tokens / wall,
      steps: count,
      exchangeMs: count > 0 ? (sum / count) * 1000 : NaN,
      moeLb: late.length ? late.reduce((a, [, v]) => a + v, 0) / late.length : NaN,
      moeLbEnd: sample(after, 'deepinfer_moe_lb'),
      replacements: sample(after, 'deepinfer_expert_replacements_total') ?? 0,
      slots: inst.slots_per_rank ?? 16,
      routedMiB: inst.ranks.map((r) => (r.routed_expert_bytes ?? NaN) / 2 ** 20),
    };
  } finally {
    s.proc.kill('SIGTERM');
    await new Promise((r) => s.proc.on('exit', r));
    fs.rmSync(s.dir, { recursive: true, force: true });
  }
}

console.log(`# ${os.cpus()[0].model}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`# ${streams} streams x ${rounds} rounds x ${maxTokens} tokens; window ${window} steps, re-placement every ${replace}`);
console.log('| EP | re-placement | decode tokens/s | decode steps | exchange ms/step (mean) | moe_lb (mean of samples after the first quarter) | moe_lb at the end | re-placements | slots per rank | routed-expert slot MiB per rank |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const setup of setups) {
  const r = await measure(setup);
  const ep = r.ranks === 1 ? '1 (no group)' : String(r.ranks);
  console.log(`| ${ep} | ${r.ranks === 1 ? '-' : r.off ? 'off' : `every ${replace} steps`} | ${r.tps.toFixed(1)} | ${r.steps || '-'} | ` +
              `${r.ranks === 1 ? '-' : r.exchangeMs.toFixed(2)} | ${r.ranks === 1 ? '-' : r.moeLb.toFixed(4)} | ` +
              `${r.ranks === 1 ? '-' : (r.moeLbEnd ?? NaN).toFixed(4)} | ${r.replacements} | ${r.ranks === 1 ? 16 : r.slots} | ` +
              `${r.ranks === 1 ? '24.0 (every expert, packed)' : r.routedMiB.map((x) => x.toFixed(1)).join(' / ')} |`);
}
