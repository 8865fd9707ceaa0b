// End-to-end test of the embedded default: starts `caf-launch --http 127.0.0.1:PORT` with a
// private KV/cache-free setup (the model and tokenizer come from ${DEEPINFER_CACHE}), then drives
// it with the official clients (openai: chat completions and responses, streaming and not;
// @anthropic-ai/sdk: messages, streaming and not) and raw HTTP for the error shapes.
// Usage: node serve.test.mjs /path/to/caf-launch
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, waitFor } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';


async function post(base, route, body, raw = false) {
  const r = await fetch(base + route, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: raw ? body : JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
}

/// The sum of the samples of metric `name` in Prometheus text.
const sum = (text, name) => text.split('\n').filter((l) => l.startsWith(name + '{') || l.startsWith(name + ' '))
  .reduce((a, l) => a + Number(l.split(' ').pop()), 0);

/// Whether the Chat Completions SSE text so far has a whole event with generated text: the first
/// event carries only the role (and `"content":""`), before the prompt is even prefilled.
const hasText = (sse) => sse.split('\n\n').slice(0, -1).some((e) => {
  if (!e.startsWith('data: {')) return false;
  return JSON.parse(e.slice(6)).choices.some((c) => (c.delta?.content ?? '') !== '');
});

/// What the server holds for requests: pool blocks, decode sequences, router leases, requests.
const held = (text) => ['deepinfer_rank_kv_blocks_used', 'deepinfer_rank_active_sequences',
  'deepinfer_decode_router_requests', 'deepinfer_requests_in_flight'].map((n) => `${n}=${sum(text, n)}`).join(' ');
const idle = (text) => ['deepinfer_rank_kv_blocks_used', 'deepinfer_rank_active_sequences',
  'deepinfer_decode_router_requests', 'deepinfer_requests_in_flight'].every((n) => sum(text, n) === 0);

const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-serve-test-${process.pid}.log`);
// A private, empty KV root: the cache test must see its own first turn miss.
const server = await startServer(exe, { logPath });
const base = server.base;

try {
  const up = await serverUp(server);
  console.log(`server up in ${up} ms on ${base}`);

  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const messages = [{ role: 'user', content: 'Say hello in three words.' }];

  let chatText;
  await check('chat completions, non-streaming', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices.length, 1);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 5, 'prompt tokens counted');
    assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8, 'max_tokens honoured');
    chatText = r.choices[0].message.content ?? '';
  });
  await check('a non-streamed answer says where its time went (Server-Timing), and /metrics the same by stage', async () => {
    const t = performance.now();
    const r = await fetch(base + '/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 4, temperature: 0 }) });
    await r.text();
    const client = performance.now() - t;
    assert.equal(r.status, 200);
    const header = r.headers.get('server-timing');
    assert.ok(header, 'a Server-Timing header');
    const stages = Object.fromEntries(header.split(', ').map((part) => {
      const m = part.match(/^([a-z_]+);dur=(\d+\.\d{3})$/);
      assert.ok(m, `a W3C Server-Timing metric with a duration: ${part}`);
      return [m[1], Number(m[2])];
    }));
    // Every stage a text request passes, the prefill's round trip split by the rank's report.
    for (const k of ['read', 'dispatch', 'parse', 'prepare', 'admit', 'decode_pick', 'swa', 'prefill_pick',
                     'prefill_send', 'rank_busy', 'rank_queue', 'rank_step', 'prefill_return', 'decode', 'total'])
      assert.ok(k in stages, `stage ${k} in ${header}`);
    assert.ok(!('vision' in stages) && !('prefill' in stages) && !('prefill_transit' in stages), header);
    assert.ok(stages.rank_step > 0, `the prefill's step took time: ${header}`);
    // The stages run one after another: they add up to the total (each rounded to a microsecond),
    // which is inside what the client saw.
    const parts = Object.entries(stages).filter(([k]) => k !== 'total').reduce((a, [, v]) => a + v, 0);
    assert.ok(Math.abs(parts - stages.total) < 0.02, `stages sum to ${parts} ms, total ${stages.total} ms`);
    assert.ok(stages.total <= client + 1, `server total ${stages.total} ms within the client's ${client} ms`);
    const metrics = await (await fetch(base + '/metrics')).text();
    for (const k of ['rank_step', 'prefill_send', 'prefill_return', 'total'])
      assert.match(metrics, new RegExp(`^deepinfer_request_stage_seconds_count\\{stage="${k}"\\} [1-9]`, 'm'),
                   `deepinfer_request_stage_seconds counts stage ${k}`);
  });
  await check('chat completions, streaming equals non-streaming (greedy)', async () => {
    const s = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0,
                                                     stream: true, stream_options: { include_usage: true } });
    let text = ''; let finish = null; let usage = null;
    for await (const c of s) {
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) { text += ch.delta?.content ?? ''; finish = ch.finish_reason ?? finish; }
    }
    assert.ok(finish, 'a finish reason arrived');
    assert.ok(usage && usage.completion_tokens >= 1);
    assert.equal(text, chatText);
  });
  await check('stop strings end the answer before them (streaming and not)', async () => {
    assert.ok(chatText.length >= 4, `greedy text long enough: ${JSON.stringify(chatText)}`);
    const stop = chatText.slice(2, 4);
    const expected = chatText.slice(0, chatText.indexOf(stop));
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0, stop: [stop] });
    assert.equal(r.choices[0].message.content ?? '', expected);
    assert.equal(r.choices[0].finish_reason, 'stop');
    const s = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0, stop: [stop], stream: true });
    let text = '';
    for await (const c of s) for (const ch of c.choices) text += ch.delta?.content ?? '';
    assert.equal(text, expected);
  });
  await check('seed is honoured (same seed, same sampled text)', async () => {
    const ask = () => openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 1, seed: 42 });
    const [a, b] = [await ask(), await ask()];
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  });
  await check('responses API, streaming equals non-streaming', async () => {
    const r = await openai.responses.create({ model: MODEL, input: 'Say hello in three words.', max_output_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'response');
    const s = await openai.responses.create({ model: MODEL, input: 'Say hello in three words.', max_output_tokens: 8,
                                              temperature: 0, stream: true });
    let text = ''; let done = false;
    for await (const e of s) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed' || e.type === 'response.incomplete') done = true;
    }
    assert.ok(done, 'response.completed or .incomplete arrived');
    assert.equal(text, r.output_text ?? '');
  });
  await check('anthropic messages, streaming equals non-streaming', async () => {
    const r = await anthropic.messages.create({ model: MODEL, max_tokens: 8, messages, temperature: 0 });
    assert.equal(r.type, 'message');
    const full = r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const s = await anthropic.messages.create({ model: MODEL, max_tokens: 8, messages, temperature: 0, stream: true });
    let text = ''; let stop = false;
    for await (const e of s) {
      if (e.type === 'content_block_delta' && e.delta.type === 'text_delta') text += e.delta.text;
      if (e.type === 'message_stop') stop = true;
    }
    assert.ok(stop, 'message_stop arrived');
    assert.equal(text, full);
  });

  await check('anthropic stream: message_start usage splits the input by the prefix-cache hit, as the final usage does', async () => {
    const req = { model: MODEL, max_tokens: 3, temperature: 0, system: 'You are a helpful assistant. '.repeat(60),
                  messages: [{ role: 'user', content: 'Hello there' }] };
    await anthropic.messages.create(req); // stores the prompt's blocks
    const s = await anthropic.messages.create({ ...req, stream: true });
    let start = null; let last = null;
    for await (const e of s) {
      if (e.type === 'message_start') start = e.message.usage;
      if (e.type === 'message_delta') last = e.usage;
    }
    assert.ok(start && last, 'message_start and message_delta arrived');
    assert.ok(last.cache_read_input_tokens >= 128, `a hit of ${last.cache_read_input_tokens} tokens`);
    assert.equal(start.input_tokens, last.input_tokens);
    assert.equal(start.cache_read_input_tokens, last.cache_read_input_tokens);
  });
  await check('anthropic thinking.budget_tokens ends the reasoning there, and the answer follows', async () => {
    // The tiny model never closes its reasoning by itself: without the budget all 1,040 tokens
    // would be thinking.
    const r = await anthropic.messages.create({ model: MODEL, max_tokens: 1040, temperature: 0,
      thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'Hello' }] });
    assert.deepEqual(r.content.map((b) => b.type), ['thinking', 'text']);
    assert.ok(r.content[1].text.length > 0, 'the answer has text');
    assert.equal(r.usage.output_tokens, 1040);
  });

  // Bad requests: each API's error shape and status, and the server keeps serving.
  await check('malformed JSON -> 400 in each API shape', async () => {
    for (const route of ['/v1/chat/completions', '/v1/responses']) {
      const r = await post(base, route, '{"model": ', true);
      assert.equal(r.status, 400, route);
      assert.ok(JSON.parse(r.text).error.message, route);
    }
    const m = await post(base, '/v1/messages', '{"model": ', true);
    assert.equal(m.status, 400);
    const j = JSON.parse(m.text);
    assert.equal(j.type, 'error');
    assert.equal(j.error.type, 'invalid_request_error');
  });
  await check('unknown model -> 404', async () => {
    const r = await post(base, '/v1/chat/completions', { model: 'nope', messages });
    assert.equal(r.status, 404);
    assert.match(JSON.parse(r.text).error.message, /nope/);
    const m = await post(base, '/v1/messages', { model: 'nope', max_tokens: 4, messages });
    assert.equal(m.status, 404);
    assert.equal(JSON.parse(m.text).error.type, 'not_found_error');
  });
  await check('prompt over the context limit -> 400', async () => {
    const long = 'word '.repeat(50000);
    const r = await post(base, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: long }], max_tokens: 4 });
    assert.equal(r.status, 400);
    assert.match(JSON.parse(r.text).error.message, /context length/);
  });
  await check('invalid tool schema -> 400', async () => {
    const r = await post(base, '/v1/chat/completions', { model: MODEL, messages, max_tokens: 4,
      tools: [{ type: 'function', function: { name: 'bad name!', parameters: { type: 'object' } } }] });
    assert.equal(r.status, 400);
    assert.ok(JSON.parse(r.text).error.message);
  });
  await check('n above 16 rejected clearly, naming the field', async () => {
    const r = await post(base, '/v1/chat/completions', { model: MODEL, messages, n: 17 });
    assert.equal(r.status, 400);
    assert.equal(JSON.parse(r.text).error.param, 'n');
  });
  await check('10-turn conversation: later turns hit the prefix cache (>= 90 %)', async () => {
    // A long system prompt makes every later turn mostly a prefix of the one before.
    const words = Array.from({ length: 2400 }, (_, i) => `w${(i * 7919) % 1009}`).join(' ');
    const conv = [{ role: 'system', content: words }];
    for (let turn = 1; turn <= 10; ++turn) {
      conv.push({ role: 'user', content: `Turn ${turn}: continue.` });
      const r = await openai.chat.completions.create({ model: MODEL, messages: conv, max_tokens: 4, temperature: 0 });
      const u = r.usage;
      const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
      console.log(`     turn ${turn}: prompt ${u.prompt_tokens} cached ${cached} (${(100 * cached / u.prompt_tokens).toFixed(1)} %)`);
      if (turn === 1) assert.equal(cached, 0, 'first turn of a fresh KV root misses');
      else assert.ok(cached >= 0.9 * u.prompt_tokens, `turn ${turn}: ${cached} of ${u.prompt_tokens} cached`);
      conv.push({ role: 'assistant', content: r.choices[0].message.content ?? '' });
    }
  });
  await check('same output with and without a hit (exact mode, 24 tokens, greedy and seeded)', async () => {
    // A prompt no earlier check sent misses; sent again it hits every block up to
    // align_down(L - 134, 128) plus the SWA snapshot (encoder and decoder windows) its first
    // prefill kept there, so the hit must change no logit. Greedy output of the tiny random model
    // barely reacts to small logit changes, so a seeded sample (temperature 1, which any change
    // of the distribution moves) is compared too.
    for (const [label, sampling] of [['greedy', { temperature: 0 }], ['seeded', { temperature: 1, seed: 7 }]]) {
      const words = Array.from({ length: 1500 }, (_, i) => `${label[0]}${(i * 104729) % 2003}`).join(' ');
      const messages = [{ role: 'system', content: words }, { role: 'user', content: 'Tell me more.' }];
      const ask = () => openai.chat.completions.create({ model: MODEL, messages, max_tokens: 24, logprobs: true, ...sampling });
      const miss = await ask();
      const hit = await ask();
      assert.equal(miss.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, `${label}: the first send misses`);
      const cached = hit.usage.prompt_tokens_details?.cached_tokens ?? 0;
      assert.ok(cached >= 0.9 * hit.usage.prompt_tokens, `${label}: the second send hits: ${cached} of ${hit.usage.prompt_tokens}`);
      assert.equal(miss.usage.completion_tokens, 24, `${label}: the comparison covers 24 tokens`);
      assert.equal(hit.usage.completion_tokens, miss.usage.completion_tokens);
      assert.equal(hit.choices[0].message.content ?? '', miss.choices[0].message.content ?? '', `${label}: same output with and without a hit`);
      // Tolerance 0: the hit changes no log-probability of any generated token.
      assert.deepEqual(hit.choices[0].logprobs.content.map((e) => e.logprob), miss.choices[0].logprobs.content.map((e) => e.logprob),
                       `${label}: same log-probabilities with and without a hit`);
      console.log(`     ${label}: ${cached} of ${hit.usage.prompt_tokens} cached; ${miss.usage.completion_tokens} tokens equal`);
    }
  });
  await check('a prompt answered by its first token alone (max_tokens 1) is stored: sent again, it hits with the same answer', async () => {
    // No decode rank takes its KV (the first token ends it), so the prefill rank stores the blocks.
    const words = Array.from({ length: 900 }, (_, i) => `m${(i * 7919) % 2003}`).join(' ');
    const ask = () => openai.chat.completions.create({ model: MODEL, max_tokens: 1, temperature: 0, logprobs: true,
                                                       messages: [{ role: 'user', content: words }] });
    const miss = await ask();
    const hit = await ask();
    assert.equal(miss.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, 'the first send misses');
    const cached = hit.usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached >= hit.usage.prompt_tokens - 134 - 127, `the second send hits every full block below L - 134: ${cached} of ${hit.usage.prompt_tokens}`);
    assert.equal(hit.choices[0].message.content ?? '', miss.choices[0].message.content ?? '');
    assert.deepEqual(hit.choices[0].logprobs.content.map((e) => e.logprob), miss.choices[0].logprobs.content.map((e) => e.logprob));
  });
  await check('client disconnect mid-stream cancels; the server keeps serving', async () => {
    const ac = new AbortController();
    const r = await fetch(base + '/v1/chat/completions', {
      method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 2000, temperature: 0, stream: true }) });
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let sse = '';
    while (!hasText(sse)) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'the stream ended before any text');
      sse += dec.decode(value, { stream: true });
    }
    ac.abort();
    const t0 = Date.now();
    const ok = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 0 });
    assert.ok(ok.choices.length === 1);
    console.log(`     next request answered ${Date.now() - t0} ms after the abort`);
    // The decode rank lets the sequence go: its KV never grows toward the 2000 tokens it asked
    // for (16 blocks of 128; it held one when the client left). Timing-free: a slow machine only
    // makes the wait longer, and the deadline only bounds a broken run.
    let text = '';
    let peak = 0;
    const waited = await waitFor('release of the cancelled stream', async () => {
      text = await (await fetch(base + '/metrics')).text();
      peak = Math.max(peak, sum(text, 'deepinfer_rank_kv_blocks_used'));
      return idle(text);
    }, { deadlineMs: 120000, everyMs: 20, explain: () => held(text) });
    assert.ok(peak <= 2, `the cancelled sequence went on decoding: ${peak} KV blocks held after the abort`);
    console.log(`     released ${waited} ms after the next answer (at most ${peak} KV blocks held meanwhile)`);
  });
  await check('200 concurrent streams complete; 50 cancelled mid-stream', async () => {
    const one = async (i) => {
      const started = Date.now();
      const ac = new AbortController();
      const r = await fetch(base + '/v1/chat/completions', {
        method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `Stream ${i}, please.` }],
                               max_tokens: i % 4 === 0 ? 500 : 12, temperature: 0, stream: true }) });
      assert.equal(r.status, 200);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let text = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += dec.decode(value, { stream: true });
        if (i % 4 === 0 && hasText(text)) { ac.abort(); return 'cancelled'; }
      }
      assert.ok(text.includes('data: [DONE]'),
                `stream ${i} ended without [DONE] after ${Date.now() - started} ms; it ended with ${JSON.stringify(text.slice(-240))}`);
      return 'done';
    };
    const t0 = Date.now();
    const out = await Promise.all(Array.from({ length: 200 }, (_, i) => one(i).catch((e) => (e.name === 'AbortError' ? 'cancelled' : e))));
    const errors = out.filter((x) => x instanceof Error);
    assert.equal(errors.length, 0, `${errors.length} streams failed after ${Date.now() - t0} ms; the first:\n`
                 + errors.slice(0, 3).map(String).join('\n'));
    assert.equal(out.filter((x) => x === 'done').length, 150);
    assert.equal(out.filter((x) => x === 'cancelled').length, 50);
    console.log(`     200 streams (50 cancelled) in ${Date.now() - t0} ms`);
    // The 150 that completed gave their sequences back before their last byte; only cancelled
    // ones can still be held. Each was cancelled mid-decode (it had sent text), so while its
    // cancel lands it may cross one block boundary, never decode on toward its 500 tokens.
    let text = await (await fetch(base + '/metrics')).text();
    const [still, blocks] = [sum(text, 'deepinfer_rank_active_sequences'), sum(text, 'deepinfer_rank_kv_blocks_used')];
    let peak = blocks;
    const waited = await waitFor('release of the cancelled streams', async () => {
      text = await (await fetch(base + '/metrics')).text();
      peak = Math.max(peak, sum(text, 'deepinfer_rank_kv_blocks_used'));
      return idle(text);
    }, { deadlineMs: 120000, everyMs: 50, explain: () => held(text) });
    console.log(`     ${still} cancelled sequences still held when all streams had ended; all released ${waited} ms later`);
    assert.ok(peak <= blocks + still, `cancelled sequences went on decoding: KV blocks ${blocks} -> ${peak} (${still} held)`);
  });
  await check('/metrics: TTFT, inter-token latency, token counters; pool back to baseline', async () => {
    const text = await (await fetch(base + '/metrics')).text();
    assert.ok(idle(text), `not at baseline: ${held(text)}`);
    assert.ok(sum(text, 'deepinfer_rank_kv_blocks_total') > 0, 'pool size per rank exported');
    assert.ok(text.includes('deepinfer_decode_router_requests{instance="local/decode",rank="1"}'), 'the router spans both decode ranks');
    assert.ok(sum(text, 'deepinfer_time_to_first_token_seconds_count') > 0);
    assert.ok(sum(text, 'deepinfer_inter_token_latency_seconds_count') > 0);
    assert.ok(sum(text, 'deepinfer_prompt_tokens_total') > 0);
    assert.ok(sum(text, 'deepinfer_cached_tokens_total') > 0);
    assert.ok(sum(text, 'deepinfer_generated_tokens_total') > 0);
    assert.equal(sum(text, 'deepinfer_requests_in_flight'), 0);
  });
  await check('still serving after the bad requests', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 0 });
    assert.ok(r.choices[0].message.content !== undefined);
  });
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
