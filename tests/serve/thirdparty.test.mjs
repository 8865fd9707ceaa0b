// Third-party clients that real users point at an OpenAI- or Anthropic-compatible server: the
// Vercel AI SDK (ai 4.x with @ai-sdk/openai and @ai-sdk/anthropic) and LangChain JS
// (@langchain/openai). Each must get the same greedy text as the official openai client (the
// reference), streaming and not, and structured output through their own schema helpers
// (zod) must come back valid.
// Usage: node thirdparty.test.mjs /path/to/caf-launch
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict } from './harness.mjs';

const [OpenAI, Anthropic, ai, aiOpenAI, aiAnthropic, lcOpenAI, zodModule] =
  apiClients(['openai', '@anthropic-ai/sdk', 'ai', '@ai-sdk/openai', '@ai-sdk/anthropic', '@langchain/openai', 'zod']);
const { z } = zodModule;
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-thirdparty-test-${process.pid}.log`);
const prompt = 'Name three colours.';
const N = 12;

const server = await startServer(exe, { logPath });
try {
  await serverUp(server);
  const base = server.base;
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const reference = (await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }],
                                                            max_tokens: N, temperature: 0 })).choices[0].message.content;
  const referenceMessages = (await anthropic.messages.create({ model: MODEL, max_tokens: N, temperature: 0,
    messages: [{ role: 'user', content: prompt }] })).content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  assert.ok(reference.length > 0 && referenceMessages.length > 0, 'the reference answers have text');
  const provider = aiOpenAI.createOpenAI({ baseURL: base + '/v1', apiKey: 'none', compatibility: 'compatible' });

  await check('Vercel AI SDK (@ai-sdk/openai chat): generateText and streamText give the reference text and usage', async () => {
    const r = await ai.generateText({ model: provider.chat(MODEL), prompt, maxTokens: N, temperature: 0, maxRetries: 0 });
    assert.equal(r.text, reference);
    assert.ok(r.usage.promptTokens > 0 && r.usage.completionTokens > 0, JSON.stringify(r.usage));
    assert.ok(['stop', 'length'].includes(r.finishReason), r.finishReason);
    const s = ai.streamText({ model: provider.chat(MODEL), prompt, maxTokens: N, temperature: 0, maxRetries: 0 });
    let text = '';
    for await (const part of s.textStream) text += part;
    assert.equal(text, reference);
  });

  await check('Vercel AI SDK (@ai-sdk/openai responses): generateText over /v1/responses gives the reference text', async () => {
    const r = await ai.generateText({ model: provider.responses(MODEL), prompt, maxTokens: N, temperature: 0, maxRetries: 0 });
    assert.equal(r.text, reference);
  });

  await check('Vercel AI SDK (@ai-sdk/anthropic): generateText and streamText over /v1/messages', async () => {
    const p = aiAnthropic.createAnthropic({ baseURL: base + '/v1', apiKey: 'none' });
    const r = await ai.generateText({ model: p(MODEL), prompt, maxTokens: N, temperature: 0, maxRetries: 0 });
    assert.equal(r.text, referenceMessages);
    const s = ai.streamText({ model: p(MODEL), prompt, maxTokens: N, temperature: 0, maxRetries: 0 });
    let text = '';
    for await (const part of s.textStream) text += part;
    assert.equal(text, referenceMessages);
  });

  await check('Vercel AI SDK generateObject (json_schema structured outputs, zod): the object validates', async () => {
    const schema = z.object({ name: z.string(), age: z.number().int(), tags: z.array(z.string()) });
    const model = provider.chat(MODEL, { structuredOutputs: true });
    const r = await ai.generateObject({ model, schema, prompt: 'Describe a person.', maxTokens: 200, temperature: 0.7,
                                        seed: 3, maxRetries: 0 });
    assert.equal(schema.safeParse(r.object).success, true, JSON.stringify(r.object));
  });

  await check('Vercel AI SDK tool calls: a forced tool call comes back with arguments that fit its schema', async () => {
    const r = await ai.generateText({
      model: provider.chat(MODEL), prompt: 'What is the weather in Paris?', maxTokens: 120, temperature: 0, maxRetries: 0,
      tools: { get_weather: ai.tool({ description: 'Weather of a city', parameters: z.object({ city: z.string() }) }) },
      toolChoice: { type: 'tool', toolName: 'get_weather' },
    });
    assert.equal(r.toolCalls.length >= 1, true, JSON.stringify(r.toolCalls));
    assert.equal(r.toolCalls[0].toolName, 'get_weather');
    assert.equal(typeof r.toolCalls[0].args.city, 'string');
  });

  await check('LangChain JS (ChatOpenAI): invoke and stream give the reference text; withStructuredOutput validates', async () => {
    const chat = new lcOpenAI.ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: base + '/v1' },
                                           temperature: 0, maxTokens: N, maxRetries: 0 });
    const r = await chat.invoke(prompt);
    assert.equal(r.content, reference);
    assert.ok(r.usage_metadata && r.usage_metadata.input_tokens > 0, JSON.stringify(r.usage_metadata));
    let text = '';
    for await (const c of await chat.stream(prompt)) text += c.content;
    assert.equal(text, reference);
    const schema = z.object({ city: z.string(), population: z.number() });
    const structured = new lcOpenAI.ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: base + '/v1' },
                                                 temperature: 0, maxTokens: 200, maxRetries: 0 })
      .withStructuredOutput(schema, { method: 'jsonSchema', strict: true });
    const obj = await structured.invoke('A city, please.');
    assert.equal(schema.safeParse(obj).success, true, JSON.stringify(obj));
  });

  await check('LangChain JS (ChatOpenAI, n: 3): three generations, each the official client\'s choice of the same index', async () => {
    const chat = new lcOpenAI.ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: base + '/v1' },
                                           temperature: 1, maxTokens: N, maxRetries: 0, n: 3,
                                           modelKwargs: { seed: 11 } });
    const r = await chat.generate([[['human', prompt]]]);
    const texts = r.generations[0].map((g) => g.text);
    assert.equal(texts.length, 3);
    const official = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt }],
                                                          max_tokens: N, temperature: 1, n: 3, seed: 11 });
    assert.deepEqual(texts, official.choices.map((c) => c.message.content));
  });
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
