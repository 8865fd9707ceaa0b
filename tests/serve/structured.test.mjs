// Structured output end to end (issue 19): the tiny random model, constrained by token masks on
// the ranks, returns objects that validate against their schema (ajv) through the official
// `openai` client — chat.completions.parse with a zod schema, response_format json_schema and
// json_object, streamed and not, Responses text.format, vLLM's structured_outputs (regex,
// choice, grammar), and forced tool calls (openai named / required tool_choice, streamed
// arguments; the Anthropic SDK's tool_choice tool / any), string formats (regex, uri-template,
// unknown names as annotations) and integers past 2^53 — always complete within max_tokens;
// a schema the compiler cannot enforce is a 400 naming the keyword.
// Usage: node structured.test.mjs /path/to/caf-launch
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, startServer, stopServer, verdict } from './harness.mjs';

const [OpenAI, Anthropic, zodPkg, AjvPkg] = apiClients(['openai', '@anthropic-ai/sdk', 'zod', 'ajv']);
const zodHelpers = createRequire(requireBase())('openai/helpers/zod');
const { z } = zodPkg;
const { zodResponseFormat } = zodHelpers;
const Ajv = AjvPkg.default ?? AjvPkg;
const MODEL = 'deepseek-v4.1-flash';

/// A path inside the API-client cache (where apiClients found the packages), to require from.
function requireBase() {
  const cache = process.env.DEEPINFER_CACHE || path.join(os.homedir(), '.cache', 'deepinfer');
  return path.join(cache, 'api-clients', 'node_modules', 'x.js');
}

const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-structured-test-${process.pid}.log`);
const server = await startServer(exe, { logPath, kvPrefix: 'deepinfer-structured-kv-' });
const ajv = new Ajv({ allErrors: true, strict: false });

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, maxItems: 3 },
    kind: { enum: ['cat', 'dog', null] },
  },
  required: ['name', 'age', 'tags', 'kind'],
  additionalProperties: false,
};

function validObject(text, schema, what) {
  let value;
  try { value = JSON.parse(text); } catch (e) { assert.fail(`${what}: not JSON (${e.message}): ${JSON.stringify(text)}`); }
  const validate = ajv.compile(schema);
  assert.ok(validate(value), `${what}: ${JSON.stringify(value)} does not match: ${ajv.errorsText(validate.errors)}`);
  return value;
}

try {
  const up = await serverUp(server);
  console.log(`server up in ${up} ms on ${server.base}`);
  const openai = new OpenAI({ baseURL: server.base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 120000 });
  const messages = [{ role: 'user', content: 'Describe a pet owner as JSON.' }];

  await check('chat response_format json_schema: every sampled object validates and ends with stop', async () => {
    for (const [seed, temperature, max_tokens] of [[1, 0, 80], [2, 1.0, 80], [3, 1.3, 60], [4, 0.8, 40]]) {
      const r = await openai.chat.completions.create({
        model: MODEL, messages, max_tokens, temperature, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } } });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', `seed ${seed}: ${c.finish_reason} after ${r.usage.completion_tokens} tokens`);
      assert.ok(r.usage.completion_tokens <= max_tokens);
      validObject(c.message.content, person, `seed ${seed}`);
    }
  });

  await check('thinking on: the reasoning is free, the content after </think> validates and ends with stop', async () => {
    // The tiny random model rarely closes its reasoning by itself: the constraint forces `</think>`
    // once what is left just fits it and the object's shortest completion.
    for (const [seed, temperature, max_tokens] of [[5, 0, 90], [6, 1.0, 120], [7, 0.9, 70]]) {
      const r = await openai.chat.completions.create({
        model: MODEL, messages, max_tokens, temperature, seed, reasoning_effort: 'high',
        response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } } });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', `seed ${seed}: ${c.finish_reason} after ${r.usage.completion_tokens} tokens`);
      assert.ok(r.usage.completion_tokens <= max_tokens);
      const reasoning = c.message.reasoning_content ?? '';
      assert.ok(reasoning.length > 0, `seed ${seed}: the reasoning came first (unconstrained)`);
      validObject(c.message.content, person, `seed ${seed} (thinking)`);
      console.log(`     seed ${seed}: ${reasoning.length} chars of reasoning, then ${c.message.content.length} chars of JSON`);
    }
  });

  await check('openai chat.completions.parse with a zod schema (zodResponseFormat)', async () => {
    const Event = z.object({ title: z.string().max(20), day: z.enum(['mon', 'tue', 'wed']), guests: z.array(z.number().int()).max(4) });
    const r = await openai.beta.chat.completions.parse({
      model: MODEL, messages: [{ role: 'user', content: 'Plan an event.' }], max_tokens: 60, temperature: 0.9, seed: 11,
      response_format: zodResponseFormat(Event, 'event') });
    const parsed = r.choices[0].message.parsed;
    assert.ok(parsed, `no parsed object: ${JSON.stringify(r.choices[0].message)}`);
    Event.parse(parsed);
  });

  await check('streamed json_schema: the concatenated deltas are a valid object', async () => {
    const stream = await openai.chat.completions.create({
      model: MODEL, messages, max_tokens: 70, temperature: 1.0, seed: 5, stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } } });
    let text = '', finish = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(finish, 'stop');
    validObject(text, person, 'stream');
  });

  await check('formats: regex and uri-template enforced, an unknown name an annotation, integers past 2^53 exact', async () => {
    const schema = {
      type: 'object',
      properties: {
        site: { type: 'string', format: 'url', maxLength: 12 }, // not a standard format: constrains nothing
        re: { type: 'string', format: 'regex', maxLength: 12 },
        tpl: { type: 'string', format: 'uri-template', maxLength: 12 },
        big: { type: 'integer', minimum: 9007199254740993, maximum: 9223372036854775807 },
      },
      required: ['site', 're', 'tpl', 'big'],
      additionalProperties: false,
    };
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: MODEL, messages, max_tokens: 120, temperature: 1.0, seed,
        response_format: { type: 'json_schema', json_schema: { name: 'formats', strict: true, schema } } });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'stop', `seed ${seed}: ${c.finish_reason}`);
      const v = JSON.parse(c.message.content);
      assert.ok(typeof v.site === 'string' && [...v.site].length <= 12, `seed ${seed}: site ${JSON.stringify(v.site)}`);
      assert.doesNotThrow(() => new RegExp(v.re, 'u'), `seed ${seed}: ${JSON.stringify(v.re)} is no ECMA-262 pattern`);
      assert.match(v.tpl, /^([^{}\s"'<>%\\^`|]|%[0-9A-Fa-f]{2}|\{[+#./;?&=,!@|]?[\w.%]+(:[1-9]\d{0,3}|\*)?(,[\w.%]+(:[1-9]\d{0,3}|\*)?)*\})*$/u,
                   `seed ${seed}: ${JSON.stringify(v.tpl)} is no RFC 6570 template`);
      const big = BigInt(/"big"\s*:\s*(\d+)/.exec(c.message.content)[1]); // JSON.parse would round it
      assert.ok(big >= 9007199254740993n && big <= 9223372036854775807n, `seed ${seed}: big ${big}`);
    }
  });

  await check('json_object: any JSON object or value, complete', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 30, temperature: 1.0, seed: 9,
                                                     response_format: { type: 'json_object' } });
    assert.equal(r.choices[0].finish_reason, 'stop');
    JSON.parse(r.choices[0].message.content);
  });

  await check('JSON whitespace: at most [so] json_whitespace (16) bytes between tokens, none with disable_any_whitespace', async () => {
    // The longest run of whitespace between JSON tokens (outside strings).
    const longestGap = (text) => {
      let longest = 0, run = 0, inString = false, escaped = false;
      for (const ch of text) {
        if (inString) {
          if (escaped) escaped = false;
          else if (ch === '\\') escaped = true;
          else if (ch === '"') inString = false;
          continue;
        }
        if (' \t\n\r'.includes(ch)) { longest = Math.max(longest, ++run); continue; }
        run = 0;
        if (ch === '"') inString = true;
      }
      return longest;
    };
    const ask = async (extra, seed) => {
      const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 80, temperature: 1.0, seed, ...extra });
      assert.equal(r.choices[0].finish_reason, 'stop');
      const text = r.choices[0].message.content;
      JSON.parse(text);
      return text;
    };
    let gaps = 0;
    for (const seed of [31, 32, 33]) {
      const free = await ask({ response_format: { type: 'json_object' } }, seed);
      assert.ok(longestGap(free) <= 16, JSON.stringify(free));
      gaps = Math.max(gaps, longestGap(free));
      for (const extra of [{ response_format: { type: 'json_object' }, structured_outputs: { disable_any_whitespace: true } },
                           { structured_outputs: { json_object: true, disable_any_whitespace: true } },
                           { structured_outputs: { json: person, disable_any_whitespace: true } }]) {
        const compact = await ask(extra, seed);
        assert.equal(longestGap(compact), 0, `${JSON.stringify(extra)}: ${JSON.stringify(compact)}`);
      }
    }
    // The random model favours whitespace: a bound it never reached would test nothing.
    assert.ok(gaps > 0, 'no whitespace at all in the free answers');
  });

  await check('Responses text.format json_schema', async () => {
    const schema = { type: 'object', properties: { ok: { type: 'boolean' }, n: { type: 'integer', minimum: 1, maximum: 9 } },
                     required: ['ok', 'n'], additionalProperties: false };
    const r = await openai.responses.create({ model: MODEL, input: 'Answer as JSON.', max_output_tokens: 40, temperature: 0.7,
                                              text: { format: { type: 'json_schema', name: 'answer', strict: true, schema } } });
    validObject(r.output_text, schema, 'responses');
  });

  await check('structured_outputs (vLLM): regex, choice and a Lark grammar, on Chat and Messages', async () => {
    const ask = async (structured_outputs, max_tokens = 30) => {
      const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens, temperature: 1.0, seed: 21,
                                                       structured_outputs });
      assert.equal(r.choices[0].finish_reason, 'stop');
      return r.choices[0].message.content;
    };
    assert.match(await ask({ regex: '[a-z]{3,8}@example\\.(com|org)' }), /^[a-z]{3,8}@example\.(com|org)$/);
    assert.ok(['yes', 'no', 'maybe (later)'].includes(await ask({ choice: ['yes', 'no', 'maybe (later)'] })));
    const expr = await ask({ grammar: 'start: expr\nexpr: term (("+" | "*") term)*\nterm: NUMBER | "(" expr ")"\nNUMBER: /[0-9]{1,3}/\n' }, 24);
    assert.match(expr, /^[0-9()+*]+$/);
    assert.doesNotThrow(() => Function(`return (${expr})`)(), `not an expression: ${expr}`);
    // The Anthropic Messages API takes the same extension.
    const m = await fetch(server.base + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 20, messages, structured_outputs: { regex: '(red|green|blue)!' } }) });
    const mj = await m.json();
    assert.equal(m.status, 200, JSON.stringify(mj));
    assert.match(mj.content[0].text, /^(red|green|blue)!$/);
    assert.equal(mj.stop_reason, 'end_turn');
  });

  const weather = { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1, maximum: 7 },
                                                  units: { enum: ['c', 'f'] } }, required: ['city', 'days'] };
  const search = { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer', minimum: 1, maximum: 20 },
                                                 filters: { type: 'array', items: { type: 'string' }, maxItems: 3 } },
                   required: ['query', 'limit'], additionalProperties: false };
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather forecast', parameters: weather } },
                 { type: 'function', function: { name: 'search', description: 'Web search', parameters: search } }];
  const byName = { get_weather: weather, search };

  await check('openai: a named tool_choice forces a call whose arguments validate (non-streamed and streamed)', async () => {
    for (const [seed, temperature] of [[1, 0], [2, 1.0], [3, 1.2]]) {
      const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 90, temperature, seed, tools,
                                                       tool_choice: { type: 'function', function: { name: 'search' } } });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.tool_calls.length, 1);
      assert.equal(c.message.tool_calls[0].function.name, 'search');
      validObject(c.message.tool_calls[0].function.arguments, search, `seed ${seed}`);
    }
    const stream = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 90, temperature: 1.0, seed: 8,
                                                          tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
                                                          stream: true });
    let args = '', name = null, finish = null;
    for await (const chunk of stream) {
      const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      args += tc?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(name, 'get_weather');
    assert.equal(finish, 'tool_calls');
    validObject(args, weather, 'streamed arguments');
  });

  await check('openai: tool_choice required calls one of the tools, arguments by its schema', async () => {
    const r = await openai.chat.completions.create({ model: MODEL, messages, max_tokens: 120, temperature: 1.0, seed: 4, tools,
                                                     tool_choice: 'required' });
    const calls = r.choices[0].message.tool_calls;
    assert.ok(calls?.length >= 1, JSON.stringify(r.choices[0]));
    for (const call of calls)
      validObject(call.function.arguments, byName[call.function.name], call.function.name);
  });

  await check('anthropic: tool_choice tool and any force a tool_use whose input validates', async () => {
    const anthropic = new Anthropic({ baseURL: server.base, apiKey: 'none', maxRetries: 0, timeout: 120000 });
    const atools = [{ name: 'get_weather', description: 'Weather forecast', input_schema: weather },
                    { name: 'search', description: 'Web search', input_schema: search }];
    for (const tool_choice of [{ type: 'tool', name: 'get_weather' }, { type: 'any' }]) {
      const m = await anthropic.messages.create({ model: MODEL, max_tokens: 120, temperature: 1.0, messages, tools: atools, tool_choice });
      assert.equal(m.stop_reason, 'tool_use', JSON.stringify(m));
      const use = m.content.find((b) => b.type === 'tool_use');
      assert.ok(use, JSON.stringify(m.content));
      if (tool_choice.type === 'tool') assert.equal(use.name, 'get_weather');
      const v = ajv.compile(byName[use.name]);
      assert.ok(v(use.input), `${JSON.stringify(use.input)}: ${ajv.errorsText(v.errors)}`);
    }
  });

  await check('a schema the compiler cannot enforce is a 400 naming the keyword', async () => {
    await assert.rejects(
      openai.chat.completions.create({ model: MODEL, messages, max_tokens: 10, response_format: {
        type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', uniqueItems: true } } } }),
      (e) => e.status === 400 && /uniqueItems/.test(e.message) && e.param === 'response_format');
  });
} finally {
  await stopServer(server);
}
verdict(logPath);
