// Expert parallelism, live (issue 16): an instance of N ranks is one EP group whose routed
// experts are sharded over its ranks. The greedy text of the embedded default is the same at
// --ranks 1, 2 and 4; a 4-rank server that re-places its experts every few steps, and loses one
// decode rank under streaming load (POST /admin/fail-rank), still completes every stream with the
// text of the undisturbed 1-rank run, shrinks to EP 3 within 2 s and grows back to 4 after down_ms.
// Usage: node ep.test.mjs /path/to/caf-launch
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { check, finish, freePort, results, singleNodeManifest, waitFor } from './harness.mjs';

const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const STREAMS = 8, MAX_TOKENS = 120, DOWN_MS = 3000;
// The 2-rank server has an API key (the others none, where the header is ignored).
const KEY = 'ep-test-key-0123';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-ep-'));
const [oneHttp, twoHttp, fourHttp, fourPort, embeddedFourHttp] =
  [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
const logs = { one: path.join(dir, 'one.log'), two: path.join(dir, 'two.log'), four: path.join(dir, 'four.log'),
               embeddedFour: path.join(dir, 'embedded-four.log') };
const out = (p) => ({ stdio: ['ignore', fs.openSync(p, 'w'), fs.openSync(p, 'a')] });

// The 4-rank server: one process with every role, from a manifest (the admin endpoints on, and
// re-placement every few steps so that it happens many times during the run).
const manifest = path.join(dir, 'four.toml');
fs.writeFileSync(manifest, singleNodeManifest({ kvRoot: path.join(dir, 'kv-four'), port: fourPort, http: fourHttp, ranks: 4,
                                                tables: `[supervision]
restart_delay_ms = 100
[balancer.prefill]
redundant_experts_per_rank = 4
ep_window_steps = 4
ep_replace_steps = 3
[balancer.decode]
redundant_experts_per_rank = 1
ep_window_steps = 20
ep_replace_steps = 25` }));
const procs = [
  // The 1-rank reference runs two independent instances of each role (--instances 2).
  spawn(exe, ['--http', `127.0.0.1:${oneHttp}`, '--ranks', '1', '--instances', '2', '--kv-root', path.join(dir, 'kv-one')],
        out(logs.one)),
  spawn(exe, ['--http', `127.0.0.1:${twoHttp}`, '--ranks', '2', '--kv-root', path.join(dir, 'kv-two'), '--admin',
              '--api-key', KEY], out(logs.two)),
  spawn(exe, ['--manifest', manifest], out(logs.four)),
  spawn(exe, ['--http', `127.0.0.1:${embeddedFourHttp}`, '--ranks', '4', '--kv-root', path.join(dir, 'kv-embedded-four')],
        out(logs.embeddedFour)),
];
const base = { one: `http://127.0.0.1:${oneHttp}`, two: `http://127.0.0.1:${twoHttp}`, four: `http://127.0.0.1:${fourHttp}`,
               embeddedFour: `http://127.0.0.1:${embeddedFourHttp}` };

// Prompts of different lengths, some past one 128-token block.
const prompts = Array.from({ length: STREAMS }, (_, i) =>
  Array.from({ length: 20 + ((i * 53) % 7) * 45 }, (_, j) => `t${(i * 71 + j * 13) % 613}`).join(' '));

async function complete(url, content) {
  const r = await fetch(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: MAX_TOKENS, messages: [{ role: 'user', content }] }) });
  const json = await r.json();
  assert.equal(r.status, 200, JSON.stringify(json));
  return json.choices[0].message.content;
}

// A streamed request; `progress.events` counts its content events as they arrive.
async function streamed(url, content, progress) {
  const r = await fetch(url + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: MAX_TOKENS, stream: true,
                           messages: [{ role: 'user', content }] }) });
  assert.equal(r.status, 200);
  let text = '', buf = '', finish = null;
  const dec = new TextDecoder();
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, at); buf = buf.slice(at + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      assert.ok(!j.error, `stream error: ${JSON.stringify(j.error)}`);
      const c = j.choices?.[0];
      if (c?.delta?.content) { text += c.delta.content; progress.events++; }
      if (c?.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish };
}

const metric = async (url, name, instance) => {
  const m = await (await fetch(url + '/metrics')).text();
  const line = m.split('\n').find((l) => l.startsWith(`${name}{instance="${instance}"}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};
const healthy = async (url) => { try { return (await fetch(url + '/health')).ok; } catch { return false; } };

// Every `name{instance="I",rank="R"} value` line of a labelled metric, as { I/R: value }.
const perRank = async (url, name) => {
  const m = await (await fetch(url + '/metrics')).text();
  const out = {};
  for (const l of m.split('\n')) {
    const x = l.match(new RegExp(`^${name}\\{instance="([^"]+)",rank="(\\d+)"\\} (\\S+)$`));
    if (x) out[`${x[1]}/${x[2]}`] = Number(x[3]);
  }
  return out;
};

await check('the servers start (embedded --ranks 1 --instances 2, --ranks 2, 4; a 4-rank manifest)', async () => {
  for (const url of Object.values(base))
    await waitFor(`/health on ${url}`, () => healthy(url), { deadlineMs: 120000, everyMs: 200 });
  await waitFor('a 4-rank decode instance', async () => (await metric(base.four, 'deepinfer_instance_ep_size', 'local/decode')) === 4,
                { deadlineMs: 60000 });
});

const reference = [];
await check('greedy text at --ranks 2 and --ranks 4 is the text at --ranks 1', async () => {
  reference.push(...await Promise.all(prompts.map((p) => complete(base.one, p))));
  const two = await Promise.all(prompts.map((p) => complete(base.two, p)));
  for (let i = 0; i < STREAMS; i++)
    assert.equal(two[i], reference[i], `prompt ${i}: ranks 2 gave other text`);
  const four = await Promise.all(prompts.map((p) => complete(base.embeddedFour, p)));
  for (let i = 0; i < STREAMS; i++)
    assert.equal(four[i], reference[i], `prompt ${i}: ranks 4 gave other text`);
  assert.ok(reference.every((t) => t.length > 0));
});

await check('--instances 2: two 1-rank instances of each role; short and long prompts at once keep both prefill instances busy', async () => {
  for (const inst of ['local/prefill', 'local/prefill.2', 'local/decode', 'local/decode.2'])
    assert.equal(await metric(base.one, 'deepinfer_instance_ep_size', inst), 1, `${inst} is not a 1-rank instance`);
  // A prompt past the first length bucket (16K tokens) beside short ones: the bucketed balancer
  // gives the buckets different instances (or, when one bucket holds both, the one with more
  // quota left takes the next job), so both prefill.
  const before = await perRank(base.one, 'deepinfer_rank_prefilled_tokens_total');
  const long = Array.from({ length: 6000 }, (_, j) => `w${(j * 7919) % 99991}`).join(' ');
  await Promise.all([complete(base.one, long), ...prompts.map((p) => complete(base.one, `${p} again`))]);
  const after = await perRank(base.one, 'deepinfer_rank_prefilled_tokens_total');
  assert.deepEqual(Object.keys(after).sort(), ['local/prefill.2/0', 'local/prefill/0'], JSON.stringify(after));
  const done = Object.keys(after).map((k) => after[k] - (before[k] ?? 0));
  assert.ok(done.every((n) => n > 0), `a prefill instance did no work: ${JSON.stringify({ before, after })}`);
  assert.ok(done[0] + done[1] > 16384, `the long prompt was not prefilled: ${JSON.stringify({ before, after })}`);
});

let streams, postAt, shrankMs, grewMs;
await check('a 4-rank server that re-places experts and loses a decode rank mid-stream completes every stream', async () => {
  const progress = prompts.map(() => ({ events: 0 }));
  const pending = prompts.map((p, i) => streamed(base.four, p, progress[i]));
  // Fail a decode rank once every stream is decoding, well before its last token.
  await waitFor('every stream decoding', () => progress.every((p) => p.events >= 3), { deadlineMs: 120000, everyMs: 10 });
  postAt = Date.now();
  const r = await fetch(base.four + '/admin/fail-rank', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ instance: 'local/decode', rank: 1, down_ms: DOWN_MS }) });
  assert.equal(r.status, 202, await r.text());
  assert.ok(progress.some((p) => p.events < MAX_TOKENS - 10), 'the failure came after the streams had ended');
  const shrank = waitFor('EP size 3', async () => (await metric(base.four, 'deepinfer_instance_ep_size', 'local/decode')) === 3,
                         { deadlineMs: 10000, everyMs: 20 }).then(() => { shrankMs = Date.now() - postAt; });
  streams = await Promise.all(pending);
  await shrank;
  for (let i = 0; i < STREAMS; i++) {
    assert.equal(streams[i].finish, 'length', `stream ${i} finished with ${streams[i].finish}`);
    assert.equal(streams[i].text, reference[i], `stream ${i}: the 4-rank run gave other text than the 1-rank run`);
  }
});

await check('the decode instance is EP 3 within 2 s of the failure and EP 4 again after down_ms', async () => {
  assert.ok(shrankMs !== undefined && shrankMs <= 2000, `EP 3 after ${shrankMs} ms`);
  await waitFor('EP size 4 again', async () => (await metric(base.four, 'deepinfer_instance_ep_size', 'local/decode')) === 4,
                { deadlineMs: DOWN_MS + 20000, everyMs: 50 });
  grewMs = Date.now() - postAt;
  assert.ok(grewMs >= DOWN_MS, `grew back after ${grewMs} ms, before down_ms`);
  const log = fs.readFileSync(logs.four, 'utf8');
  assert.match(log, /instance=local\/decode generation=\d+ (?:starting|running) ranks=3: one EP group, experts placed/);
});

await check('experts were re-placed live, and the 4-rank server still gives the 1-rank text', async () => {
  assert.ok((await metric(base.four, 'deepinfer_expert_replacements_total', 'local/decode')) > 0, 'no decode re-placement');
  assert.ok((await metric(base.four, 'deepinfer_expert_replacements_total', 'local/prefill')) > 0, 'no prefill re-placement');
  const lb = await metric(base.four, 'deepinfer_moe_lb', 'local/decode');
  assert.ok(lb >= 1, `moe_lb ${lb}`);
  const again = await Promise.all(prompts.map((p) => complete(base.four, p)));
  for (let i = 0; i < STREAMS; i++)
    assert.equal(again[i], reference[i], `prompt ${i} after re-placements`);
});

await check('GET /admin/instances: every expert on at least one slot, the configured slots per rank; behind the API keys', async () => {
  const j = await (await fetch(base.four + '/admin/instances')).json();
  const decode = j.data.find((i) => i.instance === 'local/decode');
  const prefill = j.data.find((i) => i.instance === 'local/prefill');
  for (const [inst, redundant] of [[decode, 1], [prefill, 4]]) {
    assert.equal(inst.ep_size, 4);
    assert.equal(inst.ranks.length, 4);
    const experts = inst.routed_experts;
    assert.equal(inst.slots_per_rank, Math.ceil((experts + 4 * redundant) / 4), JSON.stringify(inst));
    const layers = inst.ranks[0].experts.length;
    for (let l = 0; l < layers; l++) {
      const seen = new Set(inst.ranks.flatMap((r) => r.experts[l]));
      for (let e = 0; e < experts; e++) assert.ok(seen.has(e), `${inst.instance} layer ${l}: expert ${e} on no slot`);
      for (const r of inst.ranks) assert.equal(r.experts[l].length, inst.slots_per_rank);
    }
    // Routed experts are sharded: a rank holds its slots only, not every expert.
    for (const r of inst.ranks) assert.ok(r.routed_expert_bytes > 0);
  }
  const bad = await fetch(base.four + '/admin/fail-rank', { method: 'POST', body: '{"instance": "nope", "rank": 0}',
                                                            headers: { 'content-type': 'application/json' } });
  assert.equal(bad.status, 404);
  assert.match((await bad.json()).error.message, /No instance 'nope'/);
  // Off unless asked: the 1-rank server has no admin routes.
  assert.equal((await fetch(base.one + '/admin/instances')).status, 404);
  // Behind the API keys when the server has some.
  assert.equal((await fetch(base.two + '/admin/instances')).status, 401);
  const keyed = await fetch(base.two + '/admin/instances', { headers: { 'x-api-key': KEY } });
  assert.equal(keyed.status, 200);
  assert.equal((await keyed.json()).data.find((i) => i.instance === 'local/decode').ep_size, 2);
});

console.log(`EP 3 after ${shrankMs} ms, EP 4 again after ${grewMs} ms (down_ms ${DOWN_MS})`);
await finish(procs, logs.four, () => { if (!results.some(([, ok]) => !ok)) fs.rmSync(dir, { recursive: true, force: true }); });
