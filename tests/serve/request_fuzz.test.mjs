// Mutated request bodies on the three APIs against the embedded default: the golden requests of
// recipe/testdata/golden (chat, responses, messages: tools, thinking, images, structured output,
// multi-turn), each with 1-4 random edits anywhere in its tree (a field deleted, set to a value of
// another kind or an extreme one, a string cut or swapped for a lone surrogate, an array element
// repeated, an unknown field added, a role or type changed to another valid one), sent plain or
// streamed. Every answer must be a 200 with a whole body (a stream with its end event) or a 4xx
// in the API's own error shape whose message says what is wrong in words (never an exception's
// text); no 5xx, no dropped connection, and the server must stay up and answer each API after.
// Image URLs in the goldens become inline PNGs (this test fetches nothing).
// Found so far: a string cut inside an emoji (a lone UTF-16 surrogate escape, as JSON.stringify
// writes it) refused as unparseable JSON; a missing Messages field said in OpenAI's words;
// megabyte-long values echoed whole in errors.
// FUZZ_SEED=<n> replays another draw, FUZZ_COUNT=<n> sends more, FUZZ_SHOW=1 prints every refusal. Usage: node request_fuzz.test.mjs caf-launch
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { check, finishSeeded, seededRandom, serverUp, setupFailed, startServer } from './harness.mjs';
import { dataUri, png } from './images.mjs';

const exe = process.argv[2];
const SEED = Number(process.env.FUZZ_SEED ?? 20261207), COUNT = Number(process.env.FUZZ_COUNT ?? 600);
console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${COUNT} requests`);
const { rand, pick } = seededRandom(SEED);

const golden = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../recipe/testdata/golden');
const image = dataUri(png(64, 64, 3));
const inlineImages = (x) => {
  if (typeof x === 'string') return /^https?:\/\//.test(x) ? image : x;
  if (Array.isArray(x)) return x.map(inlineImages);
  if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, inlineImages(v)]));
  return x;
};
const routes = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' };
const bases = Object.entries(routes).flatMap(([api, route]) => fs.readdirSync(path.join(golden, api))
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ api, route, name: f, body: inlineImages(JSON.parse(fs.readFileSync(path.join(golden, api, f), 'utf8'))) })));

const values = [null, true, false, 0, -1, 1, 1.5, -0.5, 2 ** 53 + 1, 1e308, -1e308, '', 'x', '\ud800', '\u0000', 'a'.repeat(3000),
  [], {}, [[]], [null], { type: 'text' }, { type: 'x' }, ['a', 1], 'user', 'assistant', 'tool', 'auto', 'none', 'required'];
const swaps = { role: ['user', 'assistant', 'system', 'developer', 'tool', 'function', ''],
  type: ['text', 'image_url', 'input_text', 'input_image', 'output_text', 'image', 'tool_use', 'tool_result', 'thinking',
         'function', 'function_call', 'function_call_output', 'message', 'json_schema', 'json_object', 'reasoning', 'document'] };
const extras = ['stream_options', 'n', 'logprobs', 'top_logprobs', 'stop', 'stop_sequences', 'seed', 'user', 'metadata',
  'parallel_tool_calls', 'response_format', 'text', 'thinking', 'reasoning_effort', 'frequency_penalty', 'logit_bias', 'x_unknown'];

// Every (parent, key) in the tree, the root's own keys included.
function slots(root) {
  const out = [];
  const walk = (x) => {
    if (!x || typeof x !== 'object') return;
    for (const k of Object.keys(x)) {
      out.push([x, Array.isArray(x) ? Number(k) : k]);
      walk(x[k]);
    }
  };
  walk(root);
  return out;
}

function mutate(body) {
  const b = structuredClone(body);
  for (let k = 1 + Math.floor(rand() * 4); k > 0; --k) {
    const all = slots(b);
    if (all.length === 0) break;
    const [parent, key] = pick(all);
    const op = rand();
    if (op < 0.2) {
      if (Array.isArray(parent)) parent.splice(key, 1); else delete parent[key];
    } else if (op < 0.55) {
      parent[key] = structuredClone(pick(values));
    } else if (op < 0.7 && typeof parent[key] === 'string') {
      const s = parent[key];
      parent[key] = rand() < 0.5 ? s.slice(0, Math.floor(rand() * s.length)) : s + pick(['\ud800', '\u0000', '"', '\\', '<｜end▁of▁sentence｜>', '</think>']);
    } else if (op < 0.8 && Array.isArray(parent)) {
      parent.splice(key, 0, structuredClone(parent[key]));
    } else if (op < 0.9 && swaps[key]) {
      parent[key] = pick(swaps[key]);
    } else {
      const target = parent && typeof parent === 'object' && !Array.isArray(parent) ? parent : b;
      target[pick(extras)] = structuredClone(pick(values));
    }
  }
  // Short answers: the fuzz is about parsing, not generation length.
  for (const f of ['max_tokens', 'max_completion_tokens', 'max_output_tokens'])
    if (typeof b[f] === 'number' && b[f] > 16) b[f] = 16;
  if (typeof b.n === 'number' && b.n > 4) b.n = 4;
  return b;
}

const ended = { chat: /data: \[DONE\]/, responses: /event: (response\.completed|response\.incomplete|response\.failed|error)\n/,
                messages: /event: (message_stop|error)\n/ };
const exception = /json\.exception|std::|what\(\)|basic_string|terminate called|\[json\.|out_of_range|invalid constraint/;

async function send(base, api, route, body) {
  const text = JSON.stringify(body);
  try {
    const r = await fetch(base + route, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
                                          body: text, signal: AbortSignal.timeout(60000) });
    const raw = await r.text();
    let json = null;
    try { json = JSON.parse(raw); } catch { /* a stream, or not JSON */ }
    return { status: r.status, raw, json, type: r.headers.get('content-type') ?? '' };
  } catch (e) {
    return { status: 0, raw: String(e), json: null, type: '' };
  }
}

// What is wrong with one answer, or null.
function fault(api, body, r) {
  if (r.status === 0) return `no answer: ${r.raw}`;
  if (r.status >= 500) return `${r.status}: ${r.raw.slice(0, 200)}`;
  if (r.status !== 200) {
    const err = api === 'messages' ? (r.json?.type === 'error' ? r.json.error : null) : r.json?.error;
    if (!err || typeof err.message !== 'string' || !err.message || typeof err.type !== 'string')
      return `${r.status} not in the API's error shape: ${r.raw.slice(0, 200)}`;
    if (exception.test(err.message)) return `${r.status} with an exception's text: ${err.message.slice(0, 200)}`;
    return null;
  }
  if (body.stream === true) {
    if (!r.type.startsWith('text/event-stream')) return `a stream answered as ${r.type}`;
    if (!ended[api].test(r.raw)) return `a stream without its end event: ...${r.raw.slice(-200)}`;
    return null;
  }
  if (!r.json) return `a 200 whose body is not JSON: ${r.raw.slice(0, 200)}`;
  const whole = api === 'chat' ? Array.isArray(r.json.choices) : api === 'responses' ? Array.isArray(r.json.output) : Array.isArray(r.json.content);
  return whole ? null : `a 200 without its ${api} body: ${r.raw.slice(0, 200)}`;
}

const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-request-fuzz-')), 'server.log');
const server = await startServer(exe, { name: 'fuzzed', logPath, kvPrefix: 'deepinfer-request-fuzz-kv-' });
try {
  await serverUp(server);
  await check(`${COUNT} mutated requests on the three APIs (${bases.length} goldens): a 200 with a whole body or a 4xx in the API's shape, in words; no 5xx; the server up`, async () => {
    const tally = {}, wrong = [];
    for (let i = 0; i < COUNT; ++i) {
      const base = pick(bases);
      const body = mutate(base.body);
      if (rand() < 0.3 && body && typeof body === 'object' && !Array.isArray(body)) body.stream = true;
      const r = await send(server.base, base.api, base.route, body);
      const key = `${base.api} ${r.status}`;
      tally[key] = (tally[key] ?? 0) + 1;
      const why = fault(base.api, body, r);
      if (process.env.FUZZ_SHOW && r.status !== 200) console.log(`     ${r.status} ${(r.json?.error?.message ?? r.json?.error?.error?.message ?? "").slice(0, 150)}`);
      if (why) wrong.push(`#${i} ${base.api}/${base.name}: ${why} <- ${JSON.stringify(body).slice(0, 400)}`);
    }
    console.log(`     ${JSON.stringify(tally)}`);
    assert.deepEqual(wrong.slice(0, 20), [], `${wrong.length} wrong answers`);
    for (const api of Object.keys(routes))
      assert.ok(tally[`${api} 200`] > 0 && tally[`${api} 400`] > 0, `${api}: the draw has both kinds of answer`);
  });
  await check('after the fuzz: /health, and each API answers its first golden request', async () => {
    assert.equal((await fetch(server.base + '/health')).status, 200);
    for (const api of Object.keys(routes)) {
      const base = bases.find((b) => b.api === api && b.name.startsWith('01-'));
      const body = { ...base.body, stream: false };
      for (const f of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) if (f in body) body[f] = 8;
      const r = await send(server.base, api, base.route, body);
      assert.equal(r.status, 200, `${api}: ${r.raw.slice(0, 200)}`);
    }
  });
} catch (e) {
  setupFailed(e);
}
await finishSeeded(server, logPath, SEED);
