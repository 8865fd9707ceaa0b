// What real clients and operators expect of the API surface beyond generation (issue 20), with
// the official clients: each check names the behaviour it covers.
// Usage: node api.test.mjs /path/to/caf-launch
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, waitFor, postJson as post } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-api-test-${process.pid}.log`);
const messages = [{ role: 'user', content: 'Say hello in three words.' }];


/// One id of each API (and a tool-call-free answer) from the server at `base`.
async function ids(base) {
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const c = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 0 });
  const r = await openai.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 2, temperature: 0 });
  const m = await anthropic.messages.create({ model: MODEL, max_tokens: 2, messages, temperature: 0 });
  return [c.id, r.id, m.id];
}

let server = await startServer(exe, { logPath });
const seen = [];
try {
  await serverUp(server);
  let base = server.base;
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });

  // First, so the restart below would repeat these if ids were counters.
  await check('ids in each API\'s style', async () => {
    const [c, r, m] = await ids(base);
    seen.push(c, r, m);
    assert.match(c, /^chatcmpl-[0-9A-Za-z]{29}$/);
    assert.match(r, /^resp_[0-9a-f]{48}$/);
    assert.match(m, /^msg_01[0-9A-Za-z]{22}$/);
  });

  await check('messages stop_sequences: stop_reason "stop_sequence" and the matched string (streaming and not)', async () => {
    const full = await anthropic.messages.create({ model: MODEL, max_tokens: 16, messages, temperature: 0 });
    const text = full.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    assert.ok(text.length >= 6, `greedy text long enough: ${JSON.stringify(text)}`);
    const stop = text.slice(3, 5);
    const r = await anthropic.messages.create({ model: MODEL, max_tokens: 16, messages, temperature: 0,
                                               stop_sequences: ['never-in-this-text', stop] });
    assert.equal(r.stop_reason, 'stop_sequence');
    assert.equal(r.stop_sequence, stop);
    assert.equal(r.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), text.slice(0, text.indexOf(stop)));
    const s = anthropic.messages.stream({ model: MODEL, max_tokens: 16, messages, temperature: 0, stop_sequences: [stop] });
    const final = await s.finalMessage();
    assert.equal(final.stop_reason, 'stop_sequence');
    assert.equal(final.stop_sequence, stop);
    const c = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 16, temperature: 0, stop: [stop] });
    assert.equal(c.choices[0].finish_reason, 'stop');
  });

  await check('unseeded temperature-1 requests draw different tokens; a seed still repeats', async () => {
    const ask = (extra = {}) => openai.chat.completions.create({ model: MODEL, messages, max_tokens: 32, temperature: 1,
                                                                 ...extra });
    const [a, b] = await Promise.all([ask(), ask()]);
    assert.equal(a.usage.completion_tokens, 32);
    assert.notEqual(a.choices[0].message.content, b.choices[0].message.content);
    const [x, y] = [await ask({ seed: 7 }), await ask({ seed: 7 })];
    assert.equal(x.choices[0].message.content, y.choices[0].message.content);
  });

  await check('count_tokens, /tokenize and /detokenize equal the usage of the same request', async () => {
    const system = 'Answer briefly.';
    const gen = await anthropic.messages.create({ model: MODEL, max_tokens: 2, system, messages, temperature: 0 });
    const n = await anthropic.messages.countTokens({ model: MODEL, system, messages });
    assert.equal(n.input_tokens, gen.usage.input_tokens);
    const chat = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 2, temperature: 0 });
    const t = await post(base, '/tokenize', { model: MODEL, messages });
    assert.equal(t.status, 200);
    assert.equal(t.json.count, chat.usage.prompt_tokens);
    assert.equal(t.json.tokens.length, t.json.count);
    assert.ok(t.json.max_model_len > t.json.count);
    const p = await post(base, '/tokenize', { model: MODEL, prompt: 'Hello world', add_special_tokens: false });
    assert.equal(p.status, 200);
    const d = await post(base, '/detokenize', { model: MODEL, tokens: p.json.tokens });
    assert.equal(d.status, 200);
    assert.equal(d.json.prompt, 'Hello world');
    const bad = await post(base, '/detokenize', { model: MODEL, tokens: [-5] });
    assert.equal(bad.status, 400);
  });

  await check('logit_bias, min_tokens and the penalties reach the sampler', async () => {
    const t = await post(base, '/tokenize', { model: MODEL, prompt: ' hello', add_special_tokens: false });
    assert.equal(t.json.count, 1, `one token: ${JSON.stringify(t.json)}`);
    const id = t.json.tokens[0];
    const biased = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 1,
                                                          logit_bias: { [id]: 100 } });
    assert.equal(biased.choices[0].message.content, ' hello'.repeat(4));
    // EOS (id 1 in DeepSeek's tokenizers) made certain by logit_bias ends the answer at once,
    // unless min_tokens bans it until then.
    const EOS = 1;
    const short = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                         logit_bias: { [EOS]: 100 } });
    assert.equal(short.usage.completion_tokens, 1);
    assert.equal(short.choices[0].finish_reason, 'stop');
    const long = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                        logit_bias: { [EOS]: 100 }, min_tokens: 5 });
    assert.equal(long.usage.completion_tokens, 6);
    assert.equal(long.choices[0].finish_reason, 'stop');
    // ignore_eos: EOS is drawn every time and is neither a stop nor text.
    const through = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 5, temperature: 0,
                                                           logit_bias: { [EOS]: 100 }, ignore_eos: true });
    assert.equal(through.usage.completion_tokens, 5);
    assert.equal(through.choices[0].finish_reason, 'length');
    assert.equal(through.choices[0].message.content, '');
    // Penalties are accepted and applied (a greedy answer with them is still a valid answer).
    const pen = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0,
                                                       presence_penalty: 2, frequency_penalty: 2, repetition_penalty: 1.5 });
    assert.ok(pen.usage.completion_tokens >= 1);
    // A bias on an id past the vocabulary is the client's mistake: a 400 naming the parameter.
    const outside = await post(base, '/v1/chat/completions', { model: MODEL, messages, max_tokens: 2,
                                                               logit_bias: { 999999999: 5 } });
    assert.equal(outside.status, 400, JSON.stringify(outside.json));
    assert.equal(outside.json.error.param, 'logit_bias');
    assert.match(outside.json.error.message, /not in the vocabulary/);
  });

  await check('chat logprobs: one entry per completion token, top-1 at temperature 0 is the token (stream and not)', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                     logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs.content;
    assert.equal(lp.length, r.usage.completion_tokens);
    for (const e of lp) {
      assert.equal(e.top_logprobs.length, 3);
      assert.equal(e.top_logprobs[0].token, e.token);
      assert.equal(e.top_logprobs[0].logprob, e.logprob);
      assert.ok(e.logprob <= 0);
      assert.ok(Array.isArray(e.bytes) && e.bytes.length > 0);
    }
    const s = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                     logprobs: true, top_logprobs: 3, stream: true,
                                                     stream_options: { include_usage: true } });
    const got = []; let usage;
    for await (const c of s) {
      if (c.usage) usage = c.usage;
      for (const ch of c.choices) {
        got.push(...(ch.logprobs?.content ?? []));
        // OpenAI's pairing: the chunk with a token's text carries that token's entry.
        if (ch.delta?.content) assert.ok((ch.logprobs?.content ?? []).length > 0, `text without its logprobs: ${JSON.stringify(ch)}`);
      }
    }
    assert.equal(got.length, usage.completion_tokens);
    assert.deepEqual(got.map((e) => e.token), lp.map((e) => e.token));
    const plain = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 4, temperature: 0 });
    assert.equal(plain.choices[0].logprobs, null);
  });
  await check('responses logprobs (include message.output_text.logprobs): the output text\'s tokens, equal to chat\'s for the same prompt (stream and not)', async () => {
    // Chat and Responses render one user message the same way: one greedy answer, one set of
    // log-probabilities; Responses carries only what became output text.
    const c = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0,
                                                     logprobs: true, top_logprobs: 2 });
    const r = await openai.responses.create({ model: MODEL, input: messages, max_output_tokens: 12, temperature: 0,
                                             include: ['message.output_text.logprobs'], top_logprobs: 2 });
    const part = r.output.find((o) => o.type === 'message').content[0];
    assert.equal(part.text, c.choices[0].message.content);
    const bytes = (lp) => Buffer.from(lp.flatMap((e) => e.bytes)).toString('utf8');
    assert.equal(bytes(part.logprobs), part.text);
    // Chat's entries are every generated token's (the EOS too): the output text's come first.
    assert.deepEqual(part.logprobs.map((e) => [e.token, e.logprob]),
                     c.choices[0].logprobs.content.slice(0, part.logprobs.length).map((e) => [e.token, e.logprob]));
    for (const e of part.logprobs)
      assert.equal(e.top_logprobs.length, 2);
    const s = await openai.responses.create({ model: MODEL, input: messages, max_output_tokens: 12, temperature: 0,
                                              include: ['message.output_text.logprobs'], top_logprobs: 2, stream: true });
    const deltas = []; let done;
    for await (const e of s) {
      if (e.type === 'response.output_text.delta') deltas.push(...e.logprobs);
      if (e.type === 'response.output_text.done') done = e.logprobs;
    }
    assert.deepEqual(deltas, part.logprobs);
    assert.deepEqual(done, part.logprobs);
    const plain = await openai.responses.create({ model: MODEL, input: messages, max_output_tokens: 4, temperature: 0 });
    assert.deepEqual(plain.output.find((o) => o.type === 'message').content[0].logprobs, []);
    const bad = await post(base, '/v1/responses', { model: MODEL, input: 'Hi', include: ['no.such.thing'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'include[0]');
  });
  await check('legacy /v1/completions: raw prompt (BOS + text, as /tokenize counts it) or token ids, legacy logprobs, stream and not', async () => {
    const prompt = 'The quick brown fox';
    const tok = await post(base, '/tokenize', { model: MODEL, prompt });
    const r = await openai.completions.create({ model: MODEL, prompt, max_tokens: 10, temperature: 0, logprobs: 2 });
    assert.equal(r.object, 'text_completion');
    assert.match(r.id, /^cmpl-[0-9A-Za-z]{29}$/);
    assert.equal(r.usage.prompt_tokens, tok.json.count);
    const c = r.choices[0];
    const lp = c.logprobs;
    assert.ok(lp.tokens.length >= 1);
    assert.ok(lp.tokens.length === r.usage.completion_tokens || (c.finish_reason === 'stop' && lp.tokens.length === r.usage.completion_tokens - 1),
              `${lp.tokens.length} entries for ${r.usage.completion_tokens} tokens`);
    assert.equal(lp.token_logprobs.length, lp.tokens.length);
    for (let i = 0; i < lp.tokens.length; ++i) {
      // Greedy: the sampled token is the likeliest alternative.
      const best = Math.max(...Object.values(lp.top_logprobs[i]));
      assert.equal(best, lp.token_logprobs[i]);
      assert.ok(Object.keys(lp.top_logprobs[i]).length >= 1 && Object.keys(lp.top_logprobs[i]).length <= 2);
    }
    assert.equal(lp.text_offset[0], 0);
    // The same prompt as token ids gives the same completion.
    const byIds = await openai.completions.create({ model: MODEL, prompt: tok.json.tokens, max_tokens: 10, temperature: 0 });
    assert.equal(byIds.choices[0].text, c.text);
    assert.equal(byIds.choices[0].logprobs, null);
    // Streaming: the text pieces and their entries add up to the body's.
    const s = await openai.completions.create({ model: MODEL, prompt, max_tokens: 10, temperature: 0, logprobs: 2, stream: true,
                                               stream_options: { include_usage: true } });
    let text = '', tokens = [], finish, usage;
    for await (const ch of s) {
      if (ch.usage) usage = ch.usage;
      for (const x of ch.choices) {
        text += x.text;
        if (x.logprobs) tokens.push(...x.logprobs.tokens);
        if (x.finish_reason) finish = x.finish_reason;
      }
    }
    assert.equal(text, c.text);
    assert.deepEqual(tokens, lp.tokens);
    assert.equal(finish, c.finish_reason);
    assert.equal(usage.completion_tokens, r.usage.completion_tokens);
    // A stop string ends it; refusals name their field.
    if (c.text.length >= 4) {
      const stop = c.text.slice(2, 4);
      const st = await openai.completions.create({ model: MODEL, prompt, max_tokens: 10, temperature: 0, stop: [stop] });
      assert.equal(st.choices[0].text, c.text.slice(0, c.text.indexOf(stop)));
      assert.equal(st.choices[0].finish_reason, 'stop');
    }
    // (A list of prompts and echo are served: compat.test.mjs; a text suffix too: vllm_outputs.test.mjs.)
    for (const [body, param] of [[{ prompt: 'x', echo: 'yes' }, 'echo'], [{ prompt: [1, 2], suffix: 'y' }, 'suffix'],
                                 [{ prompt: [999999999] }, 'prompt'], [{ prompt: 'x', n: 17 }, 'n'],
                                 [{ prompt: 'x', best_of: 2 }, 'best_of']]) {
      const bad = await post(base, '/v1/completions', { model: MODEL, ...body });
      assert.equal(bad.status, 400, JSON.stringify(bad.json));
      assert.equal(bad.json.error.param, param);
    }
    assert.equal((await post(base, '/v1/completions', { model: 'nope', prompt: 'x' })).status, 404);
  });
  await check('responses store + previous_response_id: GET and DELETE /v1/responses/{id}; a continuation equals sending the full input', async () => {
    const first = 'My name is Ada. Please remember it.';
    const r1 = await openai.responses.create({ model: MODEL, input: first, instructions: 'Answer briefly.',
                                              max_output_tokens: 8, temperature: 0 });
    assert.equal(r1.store, true);
    const got = await openai.responses.retrieve(r1.id);
    assert.equal(got.id, r1.id);
    assert.deepEqual(got.output, r1.output);
    assert.deepEqual(got.usage, r1.usage);
    // The continuation: r1's input and output, not its instructions, then the new input.
    const r2 = await openai.responses.create({ model: MODEL, previous_response_id: r1.id, input: 'What is my name?',
                                              max_output_tokens: 8, temperature: 0 });
    assert.equal(r2.previous_response_id, r1.id);
    const full = await openai.responses.create({ model: MODEL, max_output_tokens: 8, temperature: 0,
      input: [{ role: 'user', content: first }, ...r1.output, { role: 'user', content: 'What is my name?' }] });
    assert.equal(r2.usage.input_tokens, full.usage.input_tokens);
    assert.ok(r2.usage.input_tokens > r1.usage.input_tokens);
    assert.deepEqual(r2.output.map((o) => o.content ?? o.arguments), full.output.map((o) => o.content ?? o.arguments));
    // Streamed turns are stored too, and chains go on.
    const s3 = await openai.responses.create({ model: MODEL, previous_response_id: r2.id, input: 'And again?',
                                              max_output_tokens: 4, temperature: 0, stream: true });
    let r3;
    for await (const e of s3) if (e.type === 'response.completed' || e.type === 'response.incomplete') r3 = e.response;
    assert.equal((await openai.responses.retrieve(r3.id)).id, r3.id);
    // store: false keeps nothing; unknown and deleted ids are OpenAI's 404.
    const unstored = await openai.responses.create({ model: MODEL, input: 'x', store: false, max_output_tokens: 2 });
    assert.equal(unstored.store, false);
    for (const id of [unstored.id, 'resp_does_not_exist']) {
      const miss = await post(base, '/v1/responses', { model: MODEL, input: 'y', previous_response_id: id });
      assert.equal(miss.status, 404);
      assert.equal(miss.json.error.param, 'previous_response_id');
      assert.equal((await fetch(`${base}/v1/responses/${id}`)).status, 404);
    }
    const del = await fetch(`${base}/v1/responses/${r1.id}`, { method: 'DELETE' });
    assert.equal(del.status, 200);
    assert.deepEqual(await del.json(), { id: r1.id, object: 'response.deleted', deleted: true });
    const gone = await fetch(`${base}/v1/responses/${r1.id}`);
    assert.equal(gone.status, 404);
    assert.equal((await gone.json()).error.type, 'invalid_request_error');
    assert.equal((await fetch(`${base}/v1/responses/${r1.id}`, { method: 'DELETE' })).status, 404);
    assert.equal((await openai.responses.retrieve(r2.id)).id, r2.id); // the others stay
    // A sub-resource this server does not serve says so (not "no response 'id/other'"); input_items
    // is served (compat.test.mjs).
    const other = await fetch(`${base}/v1/responses/${r2.id}/other`);
    assert.equal(other.status, 404);
    assert.match((await other.json()).error.message, /^Invalid URL \(GET .*other\): .*input_items/);
    assert.equal((await fetch(`${base}/v1/responses/${r2.id}/input_items`)).status, 200);
  });
  await check('/metrics has every vLLM name with model_name after one request', async () => {
    const text = await (await fetch(base + '/metrics')).text();
    for (const name of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc',
                        'vllm:prompt_tokens_total', 'vllm:generation_tokens_total',
                        'vllm:time_to_first_token_seconds_bucket', 'vllm:inter_token_latency_seconds_bucket',
                        'vllm:e2e_request_latency_seconds_bucket', 'vllm:prefix_cache_queries_total',
                        'vllm:prefix_cache_hits_total', 'vllm:request_success_total'])
      assert.ok(text.split('\n').some((l) => l.startsWith(name + '{') && l.includes(`model_name="${MODEL}"`)),
                `${name}{model_name="${MODEL}"} missing`);
    const v = (re) => Number((text.match(re) ?? [, 'NaN'])[1]);
    assert.ok(v(/^vllm:request_success_total\{[^}]*finished_reason="stop"[^}]*\} (\S+)$/m) >= 1, 'stops counted');
    assert.ok(v(/^vllm:request_success_total\{[^}]*finished_reason="length"[^}]*\} (\S+)$/m) >= 1, 'lengths counted');
    assert.ok(v(/^vllm:generation_tokens_total\{[^}]*\} (\S+)$/m) >= 32, 'generated tokens counted');
    assert.ok(v(/^vllm:e2e_request_latency_seconds_count\{[^}]*\} (\S+)$/m) >= 1);
    const kv = v(/^vllm:kv_cache_usage_perc\{[^}]*\} (\S+)$/m);
    assert.ok(kv >= 0 && kv <= 1, `kv usage ${kv}`);
    assert.equal(v(/^vllm:num_requests_running\{[^}]*\} (\S+)$/m), 0);
  });

  await check('API keys: --api-key and a keys file reloaded on SIGHUP; 401 in each API\'s shape, never echoing the key; /health, /version and /ping open, /metrics keyed with --protect-metrics', async () => {
    const file = path.join(os.tmpdir(), `deepinfer-api-keys-${process.pid}.txt`);
    const FIXED = 'fixed-key-0123456789', OLD = 'file-key-old-0123456789', NEW = 'file-key-new-0123456789';
    fs.writeFileSync(file, `# keys of the test\n${OLD}\n`);
    const keyed = await startServer(exe, { logPath: logPath + '.keys', name: 'keyed',
                                           flags: ['--api-key', FIXED, '--api-keys-file', file, '--protect-metrics'] });
    try {
      await serverUp(keyed);
      const b = keyed.base;
      const call = (route, body, headers = {}) => fetch(b + route, { method: 'POST', body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', ...headers } });
      const chat = { model: MODEL, messages, max_tokens: 2 };
      const anth = { model: MODEL, messages, max_tokens: 2 };
      const status = async (key) => (await call('/v1/chat/completions', chat, key ? { authorization: `Bearer ${key}` } : {})).status;
      // No key, a wrong key: 401 in each API's shape, the key never in the answer.
      const wrong = 'wrong-key-SECRET-0123';
      const c401 = await call('/v1/chat/completions', chat, { authorization: `Bearer ${wrong}` });
      assert.equal(c401.status, 401);
      const cj = await c401.text();
      assert.ok(!cj.includes(wrong), cj);
      assert.equal(JSON.parse(cj).error.code, 'invalid_api_key');
      const m401 = await call('/v1/messages', anth, { 'x-api-key': wrong });
      assert.equal(m401.status, 401);
      const mj = await m401.text();
      assert.ok(!mj.includes(wrong), mj);
      assert.equal(JSON.parse(mj).error.type, 'authentication_error');
      assert.equal(await status(undefined), 401);
      // Either header, either source of keys.
      assert.equal(await status(FIXED), 200);
      assert.equal(await status(OLD), 200);
      assert.equal((await call('/v1/messages', anth, { 'x-api-key': OLD })).status, 200);
      const sdk = new OpenAI({ baseURL: b + '/v1', apiKey: FIXED, maxRetries: 0, timeout: 60000 });
      assert.ok((await sdk.chat.completions.create(chat)).choices.length === 1);
      const asdk = new Anthropic({ baseURL: b, apiKey: OLD, maxRetries: 0, timeout: 60000 });
      assert.equal((await asdk.messages.create(anth)).type, 'message');
      await assert.rejects(new OpenAI({ baseURL: b + '/v1', apiKey: NEW, maxRetries: 0 }).chat.completions.create(chat),
                           (e) => e.status === 401);
      assert.equal((await fetch(b + '/health')).status, 200);
      // vLLM's probes are open too: /version names the server's version, /ping answers GET and POST.
      assert.match((await (await fetch(b + '/version')).json()).version, /^\d+\.\d+\.\d+$/);
      assert.equal((await fetch(b + '/ping')).status, 200);
      assert.equal((await fetch(b + '/ping', { method: 'POST' })).status, 200);
      assert.equal((await fetch(b + '/metrics')).status, 401);
      assert.equal((await fetch(b + '/metrics', { headers: { 'x-api-key': FIXED } })).status, 200);
      assert.equal((await fetch(b + '/v1/models')).status, 401);
      assert.equal((await fetch(b + '/v1/models', { headers: { authorization: `Bearer ${OLD}` } })).status, 200);
      // SIGHUP: the file's new key in, its old key out, the fixed key stays.
      fs.writeFileSync(file, `${NEW}\n`);
      keyed.proc.kill('SIGHUP');
      await waitFor('the new key accepted after SIGHUP', async () => (await status(NEW)) === 200, { deadlineMs: 20000, everyMs: 100 });
      assert.equal(await status(OLD), 401);
      assert.equal(await status(FIXED), 200);
      // A bad file on SIGHUP changes nothing (and the server stays up).
      fs.writeFileSync(file, 'short\n');
      keyed.proc.kill('SIGHUP');
      await waitFor('the reload refused in the log', async () => fs.readFileSync(logPath + '.keys', 'utf8').includes('not reloaded'),
                    { deadlineMs: 20000, everyMs: 100 });
      assert.equal(await status(NEW), 200);
      assert.ok(!keyed.exited);
      const log = fs.readFileSync(logPath + '.keys', 'utf8');
      for (const k of [FIXED, OLD, NEW, wrong])
        assert.ok(!log.includes(k), 'a key in the log');
    } finally {
      await stopServer(keyed);
      fs.rmSync(file, { force: true });
    }
  });

  await check('n: parallel samples from one prefill (one KV transfer), choice k equals the request seeded seed + k, stream interleaved by index (chat and legacy completions)', async () => {
    const transfers = async () => {
      const text = await (await fetch(base + '/metrics')).text();
      return text.split('\n').filter((l) => l.startsWith('deepinfer_kv_transfers_total'))
                 .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
    };
    const ask = (extra) => openai.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 1,
                                                            logprobs: true, ...extra });
    const before = await transfers();
    const r = await ask({ n: 4, seed: 40 });
    assert.equal(await transfers() - before, 1, 'one prefill and one KV transfer for the four samples');
    assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2, 3]);
    const alone = [];
    for (let k = 0; k < 4; ++k)
      alone.push(await ask({ seed: 40 + k }));
    for (let k = 0; k < 4; ++k) {
      assert.equal(r.choices[k].message.content, alone[k].choices[0].message.content, `choice ${k}`);
      assert.deepEqual(r.choices[k].logprobs.content.map((e) => [e.token, e.logprob]),
                       alone[k].choices[0].logprobs.content.map((e) => [e.token, e.logprob]), `choice ${k} logprobs`);
    }
    assert.ok(new Set(r.choices.map((c) => c.message.content)).size > 1, 'four seeds at temperature 1 differ');
    assert.equal(r.usage.prompt_tokens, alone[0].usage.prompt_tokens);
    assert.equal(r.usage.completion_tokens, alone.reduce((s, a) => s + a.usage.completion_tokens, 0));
    // Streamed: each choice's deltas under its index, one finish each, one usage chunk, then the end.
    const s = await ask({ n: 4, seed: 40, stream: true, stream_options: { include_usage: true } });
    const text = ['', '', '', ''], finishes = [0, 0, 0, 0];
    let usage = null, usageChunks = 0;
    for await (const c of s) {
      if (c.usage) { usage = c.usage; ++usageChunks; }
      for (const ch of c.choices) {
        text[ch.index] += ch.delta?.content ?? '';
        if (ch.finish_reason) ++finishes[ch.index];
      }
    }
    assert.deepEqual(text, r.choices.map((c) => c.message.content));
    assert.deepEqual(finishes, [1, 1, 1, 1]);
    assert.equal(usageChunks, 1);
    assert.equal(usage.completion_tokens, r.usage.completion_tokens);
    // Legacy Completions, stream and not.
    const prompt = 'Once upon a time';
    const legacy = await openai.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 1, seed: 5, n: 3 });
    assert.equal(legacy.choices.length, 3);
    for (let k = 0; k < 3; ++k) {
      const one = await openai.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 1, seed: 5 + k });
      assert.equal(legacy.choices[k].index, k);
      assert.equal(legacy.choices[k].text, one.choices[0].text, `legacy choice ${k}`);
    }
    const ls = await openai.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 1, seed: 5, n: 3,
                                                 stream: true });
    const lt = ['', '', ''];
    for await (const c of ls)
      for (const ch of c.choices) lt[ch.index] += ch.text;
    assert.deepEqual(lt, legacy.choices.map((c) => c.text));
    // Out of range: the API's 400 naming the field.
    const bad = await post(base, '/v1/chat/completions', { model: MODEL, messages, n: 17 });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'n');
  });

  await check('ids are unique across a server restart', async () => {
    await stopServer(server);
    server = await startServer(exe, { logPath: logPath + '.2' });
    await serverUp(server);
    base = server.base;
    seen.push(...await ids(base), ...await ids(base));
    assert.equal(new Set(seen).size, seen.length, `repeated ids: ${seen.join(' ')}`);
  });
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
