// Request and response shapes as the official SDK types describe them, and the vLLM extras
// clients migrating from vLLM send: each check names what a client relies on (the API probe's
// findings F4-F13).
// Usage: node compat.test.mjs /path/to/caf-launch
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, postJson as post } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const cache = process.env.DEEPINFER_CACHE || path.join(os.homedir(), '.cache', 'deepinfer');
const { jsonSchemaOutputFormat } = createRequire(path.join(cache, 'api-clients', 'node_modules', 'x.js'))(
  '@anthropic-ai/sdk/helpers/json-schema');
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-compat-test-${process.pid}.log`);
const messages = [{ role: 'user', content: 'Give me some JSON.' }];
const weather = { type: 'function', function: { name: 'get_weather', parameters: {
  type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

// A Response's text (the SDK adds `output_text` on create only, not on retrieve).
const textOf = (r) => r.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');


const server = await startServer(exe, { logPath, kvPrefix: 'deepinfer-compat-kv-' });
try {
  await serverUp(server);
  const base = server.base;
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });

  await check('messages: an empty user turn is Anthropic\'s 400 naming the message, not a BOS-only prompt', async () => {
    for (const content of [[], '', [{ type: 'text', text: '' }]]) {
      const err = await anthropic.messages.create({ model: MODEL, max_tokens: 3, messages: [{ role: 'user', content }] })
        .then(() => null, (e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, `content ${JSON.stringify(content)}: ${err}`);
      assert.equal(err.error.type, 'error');
      assert.equal(err.error.error.type, 'invalid_request_error');
      assert.match(err.error.error.message, /^messages\.0\.content/);
    }
    const count = await post(base, '/v1/messages/count_tokens', { model: MODEL, messages: [{ role: 'user', content: [] }] });
    assert.equal(count.status, 400);
  });

  await check('chat json_object and Responses text.format json_object answer JSON objects', async () => {
    for (const seed of [1, 2, 3, 4]) {
      const c = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 30, seed, temperature: 1,
                                                       response_format: { type: 'json_object' } });
      const value = JSON.parse(c.choices[0].message.content);
      assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), c.choices[0].message.content);
    }
    const r = await openai.responses.create({ model: MODEL, input: 'JSON please', max_output_tokens: 30, temperature: 1,
                                              text: { format: { type: 'json_object' } } });
    const value = JSON.parse(r.output_text);
    assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), r.output_text);
  });

  await check('chat message.refusal is null (ChatCompletionMessage requires the key)', async () => {
    const c = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 2 });
    assert.ok('refusal' in c.choices[0].message);
    assert.equal(c.choices[0].message.refusal, null);
  });

  await check('n > 1 with forced tool calls: every tool call id is unique, streamed and not', async () => {
    const body = { model: MODEL, messages: [{ role: 'user', content: 'w' }], tools: [weather], tool_choice: 'required',
                   max_tokens: 80, n: 3, temperature: 1, seed: 3 };
    const c = await openai.chat.completions.create(body);
    const ids = c.choices.flatMap((ch) => ch.message.tool_calls.map((t) => t.id));
    assert.equal(ids.length, 3);
    assert.equal(new Set(ids).size, 3, ids.join(' '));
    const s = await openai.chat.completions.create({ ...body, stream: true });
    const streamed = [];
    for await (const chunk of s)
      for (const ch of chunk.choices)
        for (const t of ch.delta.tool_calls ?? [])
          if (t.id) streamed.push(t.id);
    assert.equal(new Set(streamed).size, 3, streamed.join(' '));
  });
  await check('messages output_config.format: messages.parse() gets an object of the schema; one it cannot enforce is a 400', async () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'string', enum: ['x', 'y'] } },
                     required: ['a', 'b'], additionalProperties: false };
    for (let draw = 0; draw < 2; ++draw) { // unseeded: each draws its own seed
      const m = await anthropic.messages.parse({ model: MODEL, max_tokens: 60, temperature: 1,
                                                 messages: [{ role: 'user', content: 'Hi' }],
                                                 // transform off: the SDK would move `enum` into a description.
                                                 output_config: { format: jsonSchemaOutputFormat(schema, { transform: false }) } });
      assert.equal(m.stop_reason, 'end_turn');
      assert.ok(Number.isInteger(m.parsed_output.a), JSON.stringify(m.parsed_output));
      assert.ok(['x', 'y'].includes(m.parsed_output.b), JSON.stringify(m.parsed_output));
      assert.deepEqual(Object.keys(m.parsed_output).sort(), ['a', 'b']);
    }
    const bad = await post(base, '/v1/messages', { model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }],
                                                   output_config: { format: { type: 'json_schema',
                                                     schema: { type: 'object', properties: { n: { type: 'array', uniqueItems: true } } } } } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.type, 'invalid_request_error');
    assert.match(bad.json.error.message, /^output_config\.format: .*uniqueItems/);
  });

  await check('messages thinking adaptive and output_config.effort xhigh are accepted (thinking on)', async () => {
    const m = await anthropic.messages.create({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }],
                                               thinking: { type: 'adaptive' }, output_config: { effort: 'xhigh' } });
    assert.equal(m.content[0].type, 'thinking');
  });

  await check('vLLM extras: min_p, guided_choice / guided_json, chat_template_kwargs, functions; what cannot be done is a 400', async () => {
    const story = [{ role: 'user', content: 'Tell me a story about dragons' }];
    const text = async (extra) => (await openai.chat.completions.create({ model: MODEL, messages: story, max_tokens: 8,
                                                                         temperature: 1.5, seed: 5, ...extra })).choices[0].message.content;
    // min_p 1 keeps the most likely token alone: the greedy text, where the unconstrained draw differs.
    const greedy = await text({ top_k: 1 });
    assert.equal(await text({ min_p: 1 }), greedy);
    assert.notEqual(await text({}), greedy);
    const choice = await openai.chat.completions.create({ model: MODEL, messages: story, max_tokens: 8,
                                                          guided_choice: ['yes', 'no'] });
    assert.ok(['yes', 'no'].includes(choice.choices[0].message.content), choice.choices[0].message.content);
    const json = await openai.chat.completions.create({ model: MODEL, messages: story, max_tokens: 30,
                                                        guided_json: { type: 'object', properties: { n: { type: 'integer' } },
                                                                       required: ['n'], additionalProperties: false } });
    assert.ok(Number.isInteger(JSON.parse(json.choices[0].message.content).n), json.choices[0].message.content);
    const thinking = await openai.chat.completions.create({ model: MODEL, messages: story, max_tokens: 4,
                                                            chat_template_kwargs: { thinking: true } });
    assert.ok(thinking.choices[0].message.reasoning_content.length > 0, JSON.stringify(thinking.choices[0].message));
    const fn = await openai.chat.completions.create({ model: MODEL, messages: story, max_tokens: 80,
                                                      functions: [weather.function], function_call: { name: 'get_weather' } });
    assert.equal(fn.choices[0].message.tool_calls[0].function.name, 'get_weather');
    assert.equal(typeof JSON.parse(fn.choices[0].message.tool_calls[0].function.arguments).city, 'string');
    for (const [field, value, param] of [['prompt_logprobs', 21, 'prompt_logprobs'], ['modalities', ['text', 'audio'], 'modalities[1]'],
                                         ['min_p', 2, 'min_p']]) {
      const r = await post(base, '/v1/chat/completions', { model: MODEL, messages: story, max_tokens: 2, [field]: value });
      assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.error.param, param);
    }
  });

  await check('an unknown model is 404 model_not_found on POST routes; a non-object tool schema is a 400 naming it', async () => {
    for (const route of ['/v1/chat/completions', '/tokenize']) {
      const r = await post(base, route, { model: 'gpt-4', messages, max_tokens: 2 });
      assert.equal(r.status, 404, route);
      assert.equal(r.json.error.code, 'model_not_found', route);
    }
    const tool = { type: 'function', function: { name: 'f', parameters: { type: 'string' } } };
    const r = await post(base, '/v1/chat/completions', { model: MODEL, messages, tools: [tool], tool_choice: 'required' });
    assert.equal(r.status, 400);
    assert.equal(r.json.error.param, 'tools[0].function.parameters');
  });

  await check('/tokenize and /detokenize without model use the served model (vLLM: model is optional)', async () => {
    const named = await post(base, '/tokenize', { model: MODEL, prompt: 'Hello there' });
    const unnamed = await post(base, '/tokenize', { prompt: 'Hello there' });
    assert.equal(unnamed.status, 200, JSON.stringify(unnamed.json));
    assert.deepEqual(unnamed.json.tokens, named.json.tokens);
    const chat = await post(base, '/tokenize', { messages });
    assert.equal(chat.status, 200, JSON.stringify(chat.json));
    assert.deepEqual(chat.json, (await post(base, '/tokenize', { model: MODEL, messages })).json);
    const text = await post(base, '/detokenize', { tokens: named.json.tokens.slice(1) });
    assert.equal(text.status, 200, JSON.stringify(text.json));
    assert.equal(text.json.prompt, 'Hello there');
    assert.equal((await post(base, '/detokenize', { model: 'gpt-4', tokens: [1] })).status, 404);
  });

  await check('an output limit below the shortest output of the format is a 400 naming it, in each API', async () => {
    const tools = { tools: [weather], tool_choice: 'required' };
    const chat = await post(base, '/v1/chat/completions', { model: MODEL, messages, max_tokens: 20, ...tools });
    assert.equal(chat.status, 400, JSON.stringify(chat.json));
    assert.equal(chat.json.error.param, 'max_tokens');
    assert.match(chat.json.error.message, /raise max_tokens to at least \d+/);
    const need = Number(chat.json.error.message.match(/at least (\d+)/)[1]);
    // At that limit the forced call is complete: its arguments parse and carry the required city.
    const ok = await post(base, '/v1/chat/completions', { model: MODEL, messages, max_tokens: need, ...tools });
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
    assert.ok('city' in JSON.parse(ok.json.choices[0].message.tool_calls[0].function.arguments));
    const schema = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'], additionalProperties: false };
    const resp = await post(base, '/v1/responses', { model: MODEL, input: 'Hi', max_output_tokens: 3,
      text: { format: { type: 'json_schema', name: 'x', schema } } });
    assert.equal(resp.status, 400, JSON.stringify(resp.json));
    assert.equal(resp.json.error.param, 'max_output_tokens');
    const msg = await post(base, '/v1/messages', { model: MODEL, max_tokens: 3, messages,
      output_config: { format: { type: 'json_schema', schema } } });
    assert.equal(msg.status, 400, JSON.stringify(msg.json));
    assert.equal(msg.json.type, 'error');
    assert.match(msg.json.error.message, /^max_tokens: The output limit is 3 tokens/); // the param once
    // No limit named: the default is lowered to what the context leaves after the prompt (40960 -
    // 40955 = 5 tokens here), and that is what must hold the format's shortest output.
    const count = async (k) => (await post(base, '/tokenize', { model: MODEL,
      messages: [{ role: 'user', content: 'hello '.repeat(k) }] })).json.count;
    const c1 = await count(1000), per = ((await count(2000)) - c1) / 1000;
    const ask = (k) => post(base, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'hello '.repeat(k) }],
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
    // The format's instructions are part of the prompt: the too-long answer says how long it was.
    let k = 1000 + Math.round((40955 - c1) / per) + 200;
    const over = await ask(k);
    k -= Math.round((Number(over.json.error.message.match(/\((\d+) in the messages/)[1]) - 40955) / per);
    const long = await ask(k);
    assert.equal(long.status, 400, JSON.stringify(long.json));
    assert.equal(long.json.error.param, 'max_tokens', JSON.stringify(long.json));
    assert.match(long.json.error.message, /context leaves after the prompt is 5 tokens.*shorten the prompt/);
  });

  await check('GET /v1/models in both SDKs\' shapes: OpenAI Model and Anthropic ModelInfo pages; an unknown id is each one\'s 404', async () => {
    const o = [];
    for await (const m of openai.models.list()) o.push(m);
    assert.deepEqual(o.map((m) => m.id), [MODEL]);
    assert.equal(o[0].object, 'model');
    assert.ok(o[0].created > 1.7e9, `created ${o[0].created}`);
    // vLLM's fields, which clients built for it read as the context window: the limit the
    // server enforces (a prompt plus max_tokens of exactly it is one token over).
    assert.equal(o[0].root, MODEL);
    assert.ok(Number.isInteger(o[0].max_model_len) && o[0].max_model_len > 1000, `max_model_len ${o[0].max_model_len}`);
    await assert.rejects(openai.chat.completions.create({ model: MODEL, max_tokens: o[0].max_model_len,
                                                          messages: [{ role: 'user', content: 'hi' }] }),
                         (e) => e.status === 400 && /context|limit/i.test(e.message));
    const page = await anthropic.models.list();
    assert.equal(page.data[0].type, 'model');
    assert.equal(page.data[0].id, MODEL);
    assert.equal(typeof page.data[0].display_name, 'string');
    assert.ok(!Number.isNaN(Date.parse(page.data[0].created_at)), page.data[0].created_at);
    assert.equal(page.has_more, false);
    assert.equal(page.first_id, MODEL);
    assert.equal((await anthropic.models.retrieve(MODEL)).type, 'model');
    await assert.rejects(anthropic.models.retrieve('nope'), (e) => e.status === 404 && e.error?.error?.type === 'not_found_error');
    await assert.rejects(openai.models.retrieve('nope'), (e) => e.status === 404 && e.code === 'model_not_found');
  });

  await check('responses background: the create call answers queued at once; GET polls it to the same text as a foreground turn', async () => {
    const ask = { model: MODEL, input: 'Tell me about the sea.', max_output_tokens: 24, temperature: 0 };
    const fg = await openai.responses.create(ask);
    const bg = await openai.responses.create({ ...ask, background: true });
    assert.equal(bg.object, 'response');
    assert.equal(bg.background, true);
    assert.ok(['queued', 'in_progress'].includes(bg.status), bg.status);
    assert.deepEqual(bg.output, []);
    let got = bg;
    for (const t0 = Date.now(); ['queued', 'in_progress'].includes(got.status); await new Promise((r) => setTimeout(r, 20))) {
      assert.ok(Date.now() - t0 < 30000, 'the background turn never ended');
      got = await openai.responses.retrieve(bg.id);
    }
    assert.equal(got.id, bg.id);
    assert.equal(got.status, fg.status);
    assert.equal(got.background, true);
    assert.equal(textOf(got), fg.output_text);
    assert.equal(got.usage.output_tokens, fg.usage.output_tokens);
    // Continuing the ended turn works like any stored one.
    const next = await openai.responses.create({ ...ask, input: 'More.', previous_response_id: bg.id });
    assert.equal(next.status === 'completed' || next.status === 'incomplete', true);
    // Its cancel now answers it as it ended (idempotent), and a foreground one cannot be cancelled.
    const again = await fetch(`${base}/v1/responses/${bg.id}/cancel`, { method: 'POST' });
    assert.equal(again.status, 200);
    assert.equal((await again.json()).status, got.status);
    const fgCancel = await fetch(`${base}/v1/responses/${fg.id}/cancel`, { method: 'POST' });
    assert.equal(fgCancel.status, 400);
    assert.match((await fgCancel.json()).error.message, /only responses created with background: true/);
    const none = await fetch(`${base}/v1/responses/resp_nope/cancel`, { method: 'POST' });
    assert.equal(none.status, 404);
    // background needs store.
    await assert.rejects(openai.responses.create({ ...ask, background: true, store: false }),
                         (e) => e.status === 400 && e.param === 'background');
  });

  await check('responses background: a cancel stops the turn; GET then shows it cancelled with what it generated', async () => {
    const bg = await openai.responses.create({ model: MODEL, input: 'Write a very long story.', max_output_tokens: 4000,
                                               temperature: 0, ignore_eos: true, background: true });
    const cancelled = await fetch(`${base}/v1/responses/${bg.id}/cancel`, { method: 'POST' });
    assert.equal(cancelled.status, 200);
    assert.equal((await cancelled.json()).status, 'cancelled');
    let got;
    for (const t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 20))) {
      got = await openai.responses.retrieve(bg.id);
      if (got.status !== 'queued') break;
      assert.ok(Date.now() - t0 < 10000, 'the cancelled turn was never stored');
    }
    assert.equal(got.status, 'cancelled');
    assert.ok(got.usage.output_tokens < 4000, `${got.usage.output_tokens} tokens`);
    // The server is free again: a turn right after completes.
    const after = await openai.responses.create({ model: MODEL, input: 'Hi', max_output_tokens: 4 });
    assert.ok(['completed', 'incomplete'].includes(after.status));
  });

  await check('responses background stream: the events arrive as in the foreground, and a client that stops listening does not stop the turn', async () => {
    const ask = { model: MODEL, input: 'Name three rivers.', max_output_tokens: 40, temperature: 0 };
    const fg = await openai.responses.create(ask);
    const types = [];
    let id;
    for await (const ev of await openai.responses.create({ ...ask, background: true, stream: true })) {
      types.push(ev.type);
      id ??= ev.response?.id;
    }
    assert.equal(types[0], 'response.created');
    assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
    assert.equal(textOf(await openai.responses.retrieve(id)), fg.output_text);
    // Leave after the first event: the turn still ends and is stored.
    const ac = new AbortController();
    const stream = await openai.responses.create({ ...ask, background: true, stream: true }, { signal: ac.signal });
    let left;
    for await (const ev of stream) { left = ev.response.id; ac.abort(); break; }
    let got;
    for (const t0 = Date.now(); ; await new Promise((r) => setTimeout(r, 20))) {
      got = await openai.responses.retrieve(left);
      if (!['queued', 'in_progress'].includes(got.status)) break;
      assert.ok(Date.now() - t0 < 30000, 'the abandoned background stream never ended');
    }
    assert.equal(textOf(got), fg.output_text);
  });

  await check('responses background: GET stream=true replays the events from starting_after and follows a running turn live', async () => {
    const ask = { model: MODEL, input: 'Name three mountains.', max_output_tokens: 40, temperature: 0 };
    const first = [];
    let id;
    for await (const ev of await openai.responses.create({ ...ask, background: true, stream: true })) {
      first.push(ev);
      id ??= ev.response?.id;
    }
    // The whole stream again, then its tail: the same events, numbered as they were.
    const again = [];
    for await (const ev of await openai.responses.retrieve(id, { stream: true })) again.push(ev);
    assert.deepEqual(again, first);
    first.forEach((ev, k) => assert.equal(ev.sequence_number, k));
    const tail = [];
    for await (const ev of await openai.responses.retrieve(id, { stream: true, starting_after: 4 })) tail.push(ev);
    assert.deepEqual(tail, first.slice(5));
    // A turn created without a stream is streamed while it runs: from its first event to its end.
    const bg = await openai.responses.create({ model: MODEL, input: 'Write a story.', max_output_tokens: 300,
                                               temperature: 0, ignore_eos: true, background: true });
    const live = [];
    for await (const ev of await openai.responses.retrieve(bg.id, { stream: true })) live.push(ev);
    assert.equal(live[0].type, 'response.created');
    assert.equal(live.at(-1).type, 'response.incomplete'); // the 300-token limit
    live.forEach((ev, k) => assert.equal(ev.sequence_number, k));
    const stored = await openai.responses.retrieve(bg.id);
    assert.equal(live.filter((ev) => ev.type === 'response.output_text.delta').map((ev) => ev.delta).join(''), textOf(stored));
    assert.equal(stored.usage.output_tokens, 300);
    // A foreground response has no events to stream; starting_after must be a number.
    const fg = await openai.responses.create(ask);
    const noEvents = await fetch(`${base}/v1/responses/${fg.id}?stream=true`);
    assert.equal(noEvents.status, 400);
    assert.match((await noEvents.json()).error.message, /only a background response can be streamed again/);
    assert.equal((await fetch(`${base}/v1/responses/${id}?stream=true&starting_after=x`)).status, 400);
  });

  await check('completions: a list of prompts is one request per prompt, merged: choice index = prompt x n + k, usage summed, the stream too', async () => {
    const prompts = ['The sea', 'A mountain', [100, 200, 300]];
    const single = [];
    for (const prompt of prompts)
      single.push(await openai.completions.create({ model: MODEL, prompt, max_tokens: 6, n: 2, temperature: 0.8, seed: 5 }));
    const batch = await openai.completions.create({ model: MODEL, prompt: prompts, max_tokens: 6, n: 2, temperature: 0.8, seed: 5 });
    assert.equal(batch.choices.length, 6);
    batch.choices.forEach((c, k) => assert.equal(c.index, k));
    single.forEach((s, i) => s.choices.forEach((c) => assert.equal(batch.choices[i * 2 + c.index].text, c.text)));
    for (const f of ['prompt_tokens', 'completion_tokens', 'total_tokens'])
      assert.equal(batch.usage[f], single.reduce((a, s) => a + s.usage[f], 0), f);
    const texts = new Array(6).fill('');
    const ids = new Set();
    let usage = null, chunks = 0;
    for await (const ch of await openai.completions.create({ model: MODEL, prompt: prompts, max_tokens: 6, n: 2, temperature: 0.8,
                                                             seed: 5, stream: true, stream_options: { include_usage: true } })) {
      chunks++;
      ids.add(ch.id);
      for (const c of ch.choices) texts[c.index] += c.text;
      if (ch.usage) { assert.equal(usage, null, 'one usage chunk'); usage = ch.usage; }
    }
    assert.ok(chunks > 6);
    assert.equal(ids.size, 1, 'one completion id for the whole batch');
    assert.deepEqual(texts, batch.choices.map((c) => c.text));
    assert.equal(usage.total_tokens, batch.usage.total_tokens);
    // One prompt the server refuses fails the whole request with its error; too many prompts are a 400.
    await assert.rejects(openai.completions.create({ model: MODEL, prompt: ['fine', [1, 2, 4000000000]], max_tokens: 2 }),
                         (e) => e.status === 400 && e.param === 'prompt');
    await assert.rejects(openai.completions.create({ model: MODEL, prompt: Array(65).fill('x'), max_tokens: 1 }),
                         (e) => e.status === 400 && /at most 64/.test(e.message));
    // The server still answers.
    assert.equal((await openai.completions.create({ model: MODEL, prompt: 'hi', max_tokens: 1 })).choices.length, 1);
  });

  await check('completions echo: the prompt comes back first, and with logprobs scored as generation scores it (lm-eval\'s loglikelihood request)', async () => {
    const prompt = Array.from({ length: 60 }, (_, i) => 2000 + i * 7);
    const gen = await openai.completions.create({ model: MODEL, prompt, max_tokens: 4, logprobs: 2, temperature: 0 });
    const ids = (await post(base, '/tokenize', { model: MODEL, prompt: gen.choices[0].text, add_special_tokens: false })).json.tokens;
    assert.equal(ids.length, 4, 'the 4 generated tokens tokenize back to themselves');
    // The prompt plus what was generated, scored: the generated tokens get the logprobs and
    // alternatives generation gave them, bit for bit (a prompt under 128 tokens: the decoder saw all of it).
    const scored = await openai.completions.create({ model: MODEL, prompt: [...prompt, ...ids], max_tokens: 1, logprobs: 2,
                                                    temperature: 0, echo: true });
    const lp = scored.choices[0].logprobs;
    assert.equal(lp.token_logprobs.length, prompt.length + 4 + 1);
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    assert.deepEqual(lp.token_logprobs.slice(prompt.length, prompt.length + 4), gen.choices[0].logprobs.token_logprobs);
    assert.deepEqual(lp.top_logprobs.slice(prompt.length, prompt.length + 4), gen.choices[0].logprobs.top_logprobs);
    for (const x of lp.token_logprobs.slice(1)) assert.ok(x <= 0, `${x}`);
    // Text prompts: the text as sent, then the completion; the BOS the server adds is the first token.
    const text = await openai.completions.create({ model: MODEL, prompt: 'The sea is', max_tokens: 3, temperature: 0, echo: true,
                                                  logprobs: 1 });
    const plain = await openai.completions.create({ model: MODEL, prompt: 'The sea is', max_tokens: 3, temperature: 0 });
    assert.equal(text.choices[0].text, 'The sea is' + plain.choices[0].text);
    assert.equal(text.choices[0].logprobs.tokens.length, text.usage.prompt_tokens + text.usage.completion_tokens);
    assert.equal(text.choices[0].logprobs.tokens[0], '<｜begin▁of▁sentence｜>');
    // Streamed: the prompt is the first chunk; lm-eval's batch (a list of token lists) scores each.
    const chunks = [];
    for await (const ch of await openai.completions.create({ model: MODEL, prompt: 'The sea is', max_tokens: 3, temperature: 0,
                                                             echo: true, stream: true }))
      chunks.push(ch.choices[0]?.text ?? '');
    assert.equal(chunks[0], 'The sea is');
    assert.equal(chunks.join(''), text.choices[0].text);
    const batch = await openai.completions.create({ model: MODEL, prompt: [prompt, prompt.slice(0, 9)], max_tokens: 1, logprobs: 1,
                                                   temperature: 0, echo: true });
    assert.deepEqual(batch.choices.map((c) => c.logprobs.token_logprobs.length), [61, 10]);
    assert.deepEqual(batch.choices[0].logprobs.token_logprobs.slice(0, 60), lp.token_logprobs.slice(0, 60));
    assert.deepEqual(batch.choices[1].logprobs.token_logprobs.slice(0, 9), lp.token_logprobs.slice(0, 9));
    // Scoring is capped ([requests] max_prompt_logprobs_tokens, 4096): a longer prompt is a 400 naming logprobs.
    await assert.rejects(openai.completions.create({ model: MODEL, prompt: Array(5000).fill(100), max_tokens: 1, logprobs: 1, echo: true }),
                         (e) => e.status === 400 && e.param === 'logprobs');
  });

  await check('vLLM prompt_logprobs (Chat and Completions): each prompt token keyed by id with its logprob, rank and text, then its alternatives; not with a stream', async () => {
    const prompt = Array.from({ length: 40 }, (_, i) => 3000 + i * 11);
    const legacy = await openai.completions.create({ model: MODEL, prompt, max_tokens: 1, temperature: 0, prompt_logprobs: 2 });
    const pl = legacy.choices[0].prompt_logprobs;
    assert.equal(pl.length, prompt.length);
    assert.equal(pl[0], null);
    const echoed = await openai.completions.create({ model: MODEL, prompt, max_tokens: 1, temperature: 0, echo: true, logprobs: 2 });
    for (let i = 1; i < prompt.length; ++i) {
      const own = pl[i][String(prompt[i])];
      assert.ok(own, `position ${i} lists its own token`);
      assert.equal(own.logprob, echoed.choices[0].logprobs.token_logprobs[i]); // the same scores as echo
      assert.ok(own.rank >= 1);
      const alts = Object.entries(pl[i]).filter(([id]) => id !== String(prompt[i])).map(([, a]) => a);
      // The alternatives are the two likeliest (one of them may be the token itself, listed once).
      assert.ok(alts.length >= 1 && alts.length <= 2);
      if (own.rank > 2) assert.deepEqual(alts.map((a) => a.rank).sort(), [1, 2]);
      for (const a of alts) assert.ok(a.logprob >= own.logprob);
    }
    const chat = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 1, prompt_logprobs: true });
    assert.equal(chat.prompt_logprobs.length, chat.usage.prompt_tokens);
    assert.equal(chat.prompt_logprobs[0], null);
    assert.ok(chat.prompt_logprobs.slice(1).every((x) => Object.keys(x).length >= 1));
    await assert.rejects(openai.chat.completions.create({ model: MODEL, messages, max_tokens: 1, prompt_logprobs: 1, stream: true }),
                         (e) => e.status === 400 && e.param === 'prompt_logprobs');
  });

  await check('messages: a plain-text document block reads as its title and text; a PDF is a 400 saying to send its text', async () => {
    const ask = (first) => anthropic.messages.create({ model: MODEL, max_tokens: 8, temperature: 0,
      messages: [{ role: 'user', content: [first, { type: 'text', text: 'Summarize it.' }] }] });
    const doc = await ask({ type: 'document', title: 'Notes', source: { type: 'text', media_type: 'text/plain', data: 'The cat sat.' } });
    const asText = await ask({ type: 'text', text: 'Notes\n\nThe cat sat.' });
    assert.equal(doc.usage.input_tokens, asText.usage.input_tokens);
    assert.deepEqual(doc.content, asText.content);
    await assert.rejects(ask({ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' } }),
                         (e) => e.status === 400 && /plain-text documents only/.test(e.error?.error?.message));
  });

  await check('responses truncation auto: a conversation over the context loses its oldest turns and answers as the turns it kept; disabled is the 400', async () => {
    const words = (n, salt) => Array.from({ length: n }, (_, i) => `w${(i * 7919 + salt * 104729) % 99991}`).join(' ');
    const turn = (k) => [{ role: 'user', content: words(6000, k) }, { role: 'assistant', content: 'Noted.' }];
    const input = [...turn(1), ...turn(2), ...turn(3), { role: 'user', content: 'What did I say first?' }];
    const ask = { model: MODEL, max_output_tokens: 4, temperature: 0, instructions: 'Be brief.' };
    await assert.rejects(openai.responses.create({ ...ask, input }),
                         (e) => e.status === 400 && /maximum context length/.test(e.message));
    const cut = await openai.responses.create({ ...ask, input, truncation: 'auto' });
    assert.equal(cut.truncation, 'auto');
    assert.ok(cut.usage.input_tokens < 40960, `${cut.usage.input_tokens}`);
    // The same as sending only what was kept: the fewest oldest turns went (here the first).
    const kept = await openai.responses.create({ ...ask, input: input.slice(2) });
    assert.equal(cut.usage.input_tokens, kept.usage.input_tokens);
    assert.equal(cut.output_text, kept.output_text);
    // A last turn longer than the context alone still cannot be served.
    await assert.rejects(openai.responses.create({ ...ask, input: [{ role: 'user', content: words(20000, 9) }], truncation: 'auto' }),
                         (e) => e.status === 400);
  });

  await check('responses input_items: the SDK pages through what the model read (a previous turn\'s input and output too), newest first by default', async () => {
    const first = await openai.responses.create({ model: MODEL, max_output_tokens: 4, temperature: 0,
      input: [{ role: 'user', content: 'Hello there.' }, { role: 'assistant', content: 'Hi.' }, { role: 'user', content: 'Count to three.' }] });
    const second = await openai.responses.create({ model: MODEL, max_output_tokens: 4, temperature: 0,
                                                   previous_response_id: first.id, input: 'And to four?' });
    const items = [];
    for await (const item of openai.responses.inputItems.list(second.id, { order: 'asc', limit: 2 }))
      items.push(item);
    // The first turn's three messages, its answer, then this turn's input.
    assert.deepEqual(items.map((i) => [i.type, i.role]), [['message', 'user'], ['message', 'assistant'], ['message', 'user'],
                                                          ['message', 'assistant'], ['message', 'user']]);
    assert.equal(items[0].content[0].type, 'input_text');
    assert.equal(items[0].content[0].text, 'Hello there.');
    assert.equal(items[3].content[0].type, 'output_text');
    assert.equal(items[3].content[0].text, first.output_text);
    assert.equal(items[4].content[0].text, 'And to four?');
    assert.equal(new Set(items.map((i) => i.id)).size, items.length);
    const newest = await openai.responses.inputItems.list(second.id);
    assert.equal(newest.data[0].id, items[4].id);
    assert.equal(newest.data.length, 5);
    await assert.rejects(openai.responses.inputItems.list('resp_missing'), (e) => e.status === 404);
    const bad = await fetch(`${base}/v1/responses/${second.id}/input_items?limit=500`);
    assert.equal(bad.status, 400);
  });

} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
