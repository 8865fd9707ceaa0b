// The same model served two ways must answer the same: the embedded default (every role in one
// process, KV moved in-process) and a three-process manifest (entrypoint, prefill and decode
// nodes over loopback TCP, KV moved as cereal-packed CAF messages). Then the decode node is
// SIGKILLed in the middle of a request, then the prefill node in the middle of a prefill: each
// time the request is resubmitted and still completes.
// Usage: node split.test.mjs /path/to/caf-launch
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, clusterManifest, finish, freePort, manifestNode, results, startClusterAndReference,
         waitFor } from './harness.mjs';

const [OpenAI] = apiClients(['openai']);
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-split-'));
const [nodePorts, splitHttp, oneHttp] = [[await freePort(), await freePort(), await freePort(), await freePort()],
                                         await freePort(), await freePort()];
const manifest = path.join(dir, 'cluster.toml');
fs.writeFileSync(manifest, clusterManifest(path.join(dir, 'kv-split'), [
  manifestNode('n0', nodePorts[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${splitHttp}"\n`),
  manifestNode('p0', nodePorts[1], ['prefill'], 'ranks = 2\n'),
  manifestNode('d0', nodePorts[2], ['decode'], 'ranks = 2\n'),
  // The structured-output compiler node (issue 19): entrypoints compile constraints there.
  manifestNode('s0', nodePorts[3], ['so']),
]));
const logPath = path.join(dir, 'split.log');
const procs = startClusterAndReference(exe, manifest, logPath, oneHttp, path.join(dir, 'kv-one'));
const split = `http://127.0.0.1:${splitHttp}`;
const one = `http://127.0.0.1:${oneHttp}`;

async function chat(base, body) {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, ...body }) });
  return { status: r.status, json: await r.json() };
}

async function ready(base) {
  const t0 = Date.now();
  for (;;) {
    try {
      // Up once a request goes through: membership, instances and model loads are done.
      const r = await chat(base, { messages: [{ role: 'user', content: 'ping' }], max_tokens: 1 });
      if (r.status === 200) return Date.now() - t0;
    } catch { /* not up yet */ }
    if (Date.now() - t0 > 90000) throw new Error(`${base} not serving within 90 s (log: ${logPath})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const metric = async (base, line) => {
  const text = await (await fetch(base + '/metrics')).text();
  const l = text.split('\n').find((x) => x.startsWith(line + ' '));
  return l ? Number(l.split(' ').pop()) : 0;
};

/// The sum of the samples whose line starts with `prefix`.
const metricSum = async (base, prefix) => {
  const text = await (await fetch(base + '/metrics')).text();
  return text.split('\n').filter((x) => x.startsWith(prefix)).reduce((a, x) => a + Number(x.split(' ').pop()), 0);
};

/// CPU time (user + system) process `pid` has used, in ms; -Infinity once it is gone.
const ticks = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString()) || 100;
function cpuMs(pid) {
  try {
    const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');  // fields from the 3rd (state) on
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / ticks;  // utime, stime: fields 14, 15
  } catch {
    return -Infinity;
  }
}

try {
  console.log(`three-process manifest ready in ${await ready(split)} ms, embedded default in ${await ready(one)} ms`);
  await check('greedy output: three-process manifest == one-process default', async () => {
    const prompts = [
      [{ role: 'user', content: 'Hello there, tell me a story.' }],
      [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'List three prime numbers.' }],
      [{ role: 'user', content: 'Ünïcödé, emoji 🚀 and code: `for (;;) {}`' }],
    ];
    for (const messages of prompts) {
      const [a, b] = await Promise.all([chat(split, { messages, max_tokens: 48, logprobs: true }),
                                        chat(one, { messages, max_tokens: 48, logprobs: true })]);
      assert.equal(a.status, 200, JSON.stringify(a.json));
      assert.equal(b.status, 200, JSON.stringify(b.json));
      assert.equal(a.json.usage.completion_tokens, b.json.usage.completion_tokens);
      assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content);
      // Tolerance 0: three processes over TCP compute the one process's logits bit for bit.
      assert.deepEqual(a.json.choices[0].logprobs.content.map((e) => [e.token, e.logprob]),
                       b.json.choices[0].logprobs.content.map((e) => [e.token, e.logprob]));
    }
  });
  await check('multi-turn through the split: SWA snapshots fetched across nodes, output equal to a cold run', async () => {
    // Each turn reuses the previous turn's blocks up into its answer; the window ending there
    // was kept by the decode node (DESIGN §4.2), so the prefill node fetches it through the
    // SWA directory shard on the entrypoint. In exact mode the hit changes no token.
    const words = Array.from({ length: 1500 }, (_, i) => `w${(i * 7919) % 1009}`).join(' ');
    const conv = [{ role: 'system', content: words }];
    let last;
    let previous = 0;
    for (let turn = 1; turn <= 3; ++turn) {
      conv.push({ role: 'user', content: `Turn ${turn}: ` + Array.from({ length: 200 }, (_, i) => `x${(i * 31 + turn) % 97}`).join(' ') });
      last = await chat(split, { messages: conv, max_tokens: 150, logprobs: true });
      assert.equal(last.status, 200);
      const u = last.json.usage;
      console.log(`     turn ${turn}: prompt ${u.prompt_tokens} cached ${u.prompt_tokens_details.cached_tokens}`);
      // The hit reaches past the previous prompt: into the answer the decode node wrote.
      if (turn > 1) assert.ok(u.prompt_tokens_details.cached_tokens > previous, `turn ${turn} hit stops before the answer`);
      previous = u.prompt_tokens;
      if (turn < 3) conv.push({ role: 'assistant', content: last.json.choices[0].message.content });
    }
    const remote = await metric(split, 'deepinfer_prefix_cache_snapshot_hits_total{source="remote"}');
    console.log(`     remote snapshot hits: ${remote}`);
    assert.ok(remote >= 1, 'at least one window came from the decode node');
    // The embedded default has never seen this conversation: a cold prefill of the same prompt.
    const cold = await chat(one, { messages: conv, max_tokens: 150, logprobs: true });
    assert.equal(cold.json.usage.prompt_tokens_details.cached_tokens, 0);
    assert.equal(last.json.choices[0].message.content, cold.json.choices[0].message.content);
    assert.deepEqual(last.json.choices[0].logprobs.content.map((e) => e.logprob),
                     cold.json.choices[0].logprobs.content.map((e) => e.logprob), 'the hit changes no log-probability');
  });
  await check('streaming through the split equals non-streaming (official openai client)', async () => {
    const openai = new OpenAI({ baseURL: split + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
    const messages = [{ role: 'user', content: 'Stream me something.' }];
    const full = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 32, temperature: 0 });
    let text = '';
    for await (const c of await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 32, temperature: 0, stream: true }))
      text += c.choices[0]?.delta?.content ?? '';
    assert.equal(text, full.choices[0].message.content);
  });
  await check('KV moved as CAF messages across processes, in-process in one', async () => {
    assert.ok(await metric(split, 'deepinfer_kv_transfers_total{transport="caf_message"}') > 0);
    assert.ok(await metric(split, 'deepinfer_kv_transfer_bytes_total{transport="caf_message"}') > 0);
    assert.equal(await metric(split, 'deepinfer_kv_transfers_total{transport="in_process"}'), 0);
    assert.ok(await metric(one, 'deepinfer_kv_transfers_total{transport="in_process"}') > 0);
  });
  // A schema of its own per call, so that no node has it compiled already.
  const schemaRequest = (tag) => ({
    messages: [{ role: 'user', content: `Describe a ${tag} as JSON.` }], max_tokens: 96, temperature: 0,
    response_format: { type: 'json_schema', json_schema: { name: tag, strict: true, schema: {
      type: 'object', additionalProperties: false, required: ['name', tag],
      properties: { name: { type: 'string', maxLength: 12 }, [tag]: { type: 'integer', minimum: 0, maximum: 99 } } } } },
  });
  const compiles = (where, result) => metric(split, `deepinfer_so_compile_requests_total{where="${where}",result="${result}"}`);
  const checkObject = (r, tag) => {
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.choices[0].finish_reason, 'stop');
    const obj = JSON.parse(r.json.choices[0].message.content);
    assert.deepEqual(Object.keys(obj).sort(), ['name', tag].sort());
    assert.ok(Number.isInteger(obj[tag]) && obj[tag] >= 0 && obj[tag] <= 99 && obj.name.length <= 12);
  };
  await check('structured output compiled on the so node: the same object as the embedded default', async () => {
    const before = await compiles('so_node', 'compiled');
    const r = await chat(split, schemaRequest('planet'));
    checkObject(r, 'planet');
    assert.equal(r.json.choices[0].message.content, (await chat(one, schemaRequest('planet'))).json.choices[0].message.content);
    assert.equal(await compiles('so_node', 'compiled'), before + 1, 'the entrypoint had the so node compile it');
    assert.equal(await compiles('local', 'compiled'), 0, 'nothing compiled on the entrypoint');
    // A schema the compiler refuses is the API's 400 from the so node's answer.
    const bad = await chat(split, { messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema',
      json_schema: { name: 'bad', schema: { type: 'array', not: { uniqueItems: true } } } } });
    assert.equal(bad.status, 400, JSON.stringify(bad.json));
    assert.equal(bad.json.error.param, 'response_format');
    assert.match(bad.json.error.message, /not/);
    assert.equal(await compiles('so_node', 'refused'), 1);
  });
  await check('so node SIGKILLed: constrained requests compile on the entrypoint instead, same object', async () => {
    const pids = spawnSync('pgrep', ['-f', `${manifest} --node s0`]).stdout.toString().trim().split('\n').filter(Boolean);
    assert.equal(pids.length, 1, 'one so node process');
    process.kill(Number(pids[0]), 'SIGKILL');
    const r = await chat(split, schemaRequest('river'));
    checkObject(r, 'river');
    assert.equal(r.json.choices[0].message.content, (await chat(one, schemaRequest('river'))).json.choices[0].message.content);
    assert.ok(await compiles('local', 'compiled') >= 1, 'the entrypoint compiled it itself');
    console.log(`     ${await compiles('so_node', 'unanswered')} compile(s) left unanswered by the dead so node`);
  });
  await check('decode node SIGKILLed mid-request: the request is resubmitted, hits its own prompt and completes with the same text', async () => {
    // A prompt of several blocks, new to the cluster: its blocks are written when its KV reaches
    // d0 (issue 17), so the resubmission's prefill hits them although d0 never finished it. The
    // undisturbed run is the embedded default's (its own store): on the split it would store the
    // prompt itself.
    const words = Array.from({ length: 500 }, (_, i) => `c${(i * 613) % 1201}`).join(' ');
    const request = { messages: [{ role: 'user', content: 'Count to a thousand. ' + words }], max_tokens: 400 };
    const undisturbed = await chat(one, request);
    assert.equal(undisturbed.status, 200, JSON.stringify(undisturbed.json));
    const before = await metric(split, 'deepinfer_generated_tokens_total');
    const reused = await metric(split, 'deepinfer_resubmitted_cached_tokens_total');
    const long = chat(split, request);
    // Mid-request means the decode node is decoding it: the entrypoint has counted the prefill's
    // first token and some tokens from d0.
    const generated = await waitFor('tokens from the decode node', async () =>
      (await metric(split, 'deepinfer_generated_tokens_total')) - before >= 8);
    assert.ok(before + 400 - (await metric(split, 'deepinfer_generated_tokens_total')) > 0,
              'the request was still decoding when d0 was killed');
    const pids = spawnSync('pgrep', ['-f', `${manifest} --node d0`]).stdout.toString().trim().split('\n').filter(Boolean);
    assert.equal(pids.length, 1, 'one decode node process');
    process.kill(Number(pids[0]), 'SIGKILL');
    console.log(`     d0 killed ${generated} ms after the request was sent`);
    const r = await long;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.usage.completion_tokens, 400);
    assert.equal(r.json.choices[0].finish_reason, 'length');
    // The resubmission (prompt + what it had generated, decoder anchored at the prompt) continues
    // the very same greedy output, on the blocks d0 wrote.
    assert.equal(r.json.choices[0].message.content, undisturbed.json.choices[0].message.content);
    assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, 0, 'the first attempt was cold');
    const hit = (await metric(split, 'deepinfer_resubmitted_cached_tokens_total')) - reused;
    console.log(`     prompt ${r.json.usage.prompt_tokens} tokens; the resubmission reused ${hit}`);
    // The hit policy keeps the last 134 prompt tokens to recompute: whole blocks below that.
    assert.ok(hit >= 128 && hit <= r.json.usage.prompt_tokens - 134, `the resubmission hit its own prompt (${hit} tokens)`);
    const log = fs.readFileSync(logPath, 'utf8');
    assert.match(log, /node=d0 dead/);
    assert.match(log, /resubmitting/);
    // The restarted node serves again.
    const after = await chat(split, { messages: [{ role: 'user', content: 'Still there?' }], max_tokens: 8 });
    assert.equal(after.status, 200);
  });
  await check('prefill node SIGKILLed mid-prefill: the request is resubmitted and completes with the same text', async () => {
    // A prompt long enough that its prefill is still running when the node dies.
    const words = Array.from({ length: 6000 }, (_, i) => `v${(i * 7919) % 4999}`).join(' ');
    const reference = await chat(one, { messages: [{ role: 'user', content: words }], max_tokens: 8 });
    assert.equal(reference.status, 200, JSON.stringify(reference.json));
    const pids = spawnSync('pgrep', ['-f', `${manifest} --node p0`]).stdout.toString().trim().split('\n').filter(Boolean);
    assert.equal(pids.length, 1, 'one prefill node process');
    const p0 = Number(pids[0]);
    const cpu0 = cpuMs(p0);
    let answered = false;
    const long = chat(split, { messages: [{ role: 'user', content: words }], max_tokens: 8 }).finally(() => { answered = true; });
    // Mid-prefill means p0 computes it: the entrypoint holds the request on a prefill rank and
    // p0 has spent CPU time on it (an idle node spends next to none).
    const waited = await waitFor('p0 prefilling the prompt', async () =>
      (await metricSum(split, 'deepinfer_prefill_queue_requests{')) >= 1 && cpuMs(p0) - cpu0 >= 150);
    const used = cpuMs(p0) - cpu0;
    assert.ok(!answered, 'the prefill was still running when p0 was killed');
    process.kill(p0, 'SIGKILL');
    console.log(`     p0 killed ${waited} ms after the request was sent (${used} ms of its CPU time)`);
    const r = await long;
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.usage.completion_tokens, 8);
    assert.equal(r.json.choices[0].message.content, reference.json.choices[0].message.content);
    assert.match(fs.readFileSync(logPath, 'utf8'), /prefill rank down/);
  });
} catch (e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}`);
}
await finish(procs, logPath, () => fs.rmSync(dir, { recursive: true, force: true }));
