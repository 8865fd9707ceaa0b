// Request and response shapes as the official SDK types describe them, and the vLLM extras
// clients migrating from vLLM send: each check names what a client relies on (the API probe's
// findings F4-F13).
// Usage: node compat.test.mjs /path/to/caf-launch
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-compat-test-${process.pid}.log`);
const messages = [{ role: 'user', content: 'Give me some JSON.' }];
const weather = { type: 'function', function: { name: 'get_weather', parameters: {
  type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };

async function post(base, route, body) {
  const r = await fetch(base + route, { method: 'POST', headers: { 'content-type': 'application/json' },
                                         body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

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
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
