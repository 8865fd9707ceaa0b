// vLLM's output controls, as clients migrating from vLLM send them (RL and evaluation frameworks
// read token ids and stop reasons): stop_token_ids with stop_reason, include_stop_str_in_output,
// allowed_token_ids, bad_words, skip_special_tokens and return_tokens_as_token_ids, on Chat and
// legacy Completions, and continuing a final assistant message (vLLM's continue_final_message,
// Anthropic's prefill, with vLLM's echo) and OpenAI's Predicted Outputs, through the official clients (openai passes unknown fields through) and
// raw HTTP for the error cases. Every expectation comes from an unconstrained run of the same
// seeded request: the draw of a position depends on the seed and the position only, so a request
// that stops or bans a token generates what the unconstrained one did up to that point.
// Usage: node vllm_outputs.test.mjs /path/to/caf-launch
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, postJson as post } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-vllm-outputs-test-${process.pid}.log`);
const TOKENS = 24;
const base = { model: MODEL, messages: [{ role: 'user', content: 'Tell me a story about a lighthouse.' }],
               max_tokens: TOKENS, temperature: 1, seed: 11, ignore_eos: true };
const utf8 = new TextDecoder('utf-8', { fatal: true });
const isText = (bytes) => { try { utf8.decode(Buffer.from(bytes)); return true; } catch { return false; } };


const server = await startServer(exe, { logPath, kvPrefix: 'deepinfer-vllm-outputs-kv-' });
try {
  await serverUp(server);
  const url = server.base;
  const openai = new OpenAI({ baseURL: url + '/v1', apiKey: 'none', maxRetries: 0, timeout: 60000 });
  const chat = (extra) => openai.chat.completions.create({ ...base, ...extra });
  const tokenize = async (text) => (await post(url, '/tokenize', { prompt: text, add_special_tokens: false })).json.tokens;

  // The unconstrained run: its ids (return_tokens_as_token_ids) and each token's bytes.
  const asIds = await chat({ logprobs: true, top_logprobs: 2, return_tokens_as_token_ids: true });
  const plain = await chat({ logprobs: true });
  const ids = asIds.choices[0].logprobs.content.map((e) => {
    assert.match(e.token, /^token_id:\d+$/);
    for (const alt of e.top_logprobs)
      assert.match(alt.token, /^token_id:\d+$/);
    return Number(e.token.slice('token_id:'.length));
  });
  const bytes = plain.choices[0].logprobs.content.map((e) => e.bytes);
  const content = plain.choices[0].message.content;
  assert.equal(ids.length, TOKENS);
  assert.equal(asIds.choices[0].message.content, content);
  // A position whose id is new there and whose text ends on a character boundary, so the text up to
  // it and through it are exact.
  const prefixBytes = (k) => bytes.slice(0, k).flat();
  const k = ids.findIndex((id, i) => i >= 2 && !ids.slice(0, i).includes(id) && isText(prefixBytes(i)) &&
                                     isText(prefixBytes(i + 1)) && bytes[i].length > 0);
  assert.ok(k > 0, `no usable stop position in ${ids}`);
  const before = utf8.decode(Buffer.from(prefixBytes(k)));
  const through = utf8.decode(Buffer.from(prefixBytes(k + 1)));

  await check('stop_token_ids: the answer ends at the id with finish_reason stop and stop_reason the id, its text left out unless include_stop_str_in_output', async () => {
    const c = await chat({ stop_token_ids: [ids[k]] });
    assert.equal(c.choices[0].finish_reason, 'stop');
    assert.equal(c.choices[0].stop_reason, ids[k]);
    assert.equal(c.choices[0].message.content, before);
    assert.equal(c.usage.completion_tokens, k + 1); // the stop id is generated and counted
    const kept = await chat({ stop_token_ids: [ids[k]], include_stop_str_in_output: true });
    assert.equal(kept.choices[0].message.content, through);
    assert.equal(kept.choices[0].stop_reason, ids[k]);
    // Unconstrained: length, no stop reason; EOS (not ignored) would be stop with a null reason.
    assert.equal(plain.choices[0].finish_reason, 'length');
    assert.equal(plain.choices[0].stop_reason, null);
  });

  await check('stop_token_ids streamed: the deltas spell the same text and the finishing chunk names the id', async () => {
    const s = await chat({ stop_token_ids: [ids[k]], stream: true });
    let text = '';
    let last;
    for await (const chunk of s) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.choices[0]?.finish_reason)
        last = chunk.choices[0];
    }
    assert.equal(text, before);
    assert.equal(last.finish_reason, 'stop');
    assert.equal(last.stop_reason, ids[k]);
  });

  await check('stop strings: stop_reason is the string; include_stop_str_in_output keeps it at the end', async () => {
    const word = utf8.decode(Buffer.from(bytes[k]));
    const at = content.indexOf(word);
    assert.ok(at >= 0);
    const cut = await chat({ stop: [word] });
    assert.equal(cut.choices[0].message.content, content.slice(0, at));
    assert.equal(cut.choices[0].stop_reason, word);
    const kept = await chat({ stop: [word], include_stop_str_in_output: true });
    assert.equal(kept.choices[0].message.content, content.slice(0, at + word.length));
    assert.equal(kept.choices[0].finish_reason, 'stop');
  });

  await check('allowed_token_ids: every generated id is one of them', async () => {
    const allowed = [...new Set([ids[0], ids[k], ids[TOKENS - 1], 1000])];
    const c = await chat({ allowed_token_ids: allowed, logprobs: true, return_tokens_as_token_ids: true, seed: 12 });
    const got = c.choices[0].logprobs.content.map((e) => Number(e.token.slice('token_id:'.length)));
    assert.equal(got.length, TOKENS);
    for (const id of got)
      assert.ok(allowed.includes(id), `${id} not in ${allowed}`);
  });

  await check('bad_words: the word\'s tokens never come; everything before its first place is unchanged', async () => {
    // A generated token that is a word on its own (one token with or without its leading space).
    let found = null;
    for (let i = 1; i < TOKENS && !found; ++i) {
      if (!isText(bytes[i]))
        continue;
      const word = utf8.decode(Buffer.from(bytes[i])).trimStart();
      if (!word || /\s/.test(word))
        continue;
      const bare = await tokenize(word);
      const spaced = await tokenize(' ' + word);
      const banned = [bare, spaced].filter((t) => t.length === 1).map((t) => t[0]);
      const first = ids.findIndex((id) => banned.includes(id));
      if (banned.length && first >= 0)
        found = { word, banned, first };
    }
    assert.ok(found, `no single-token word among ${ids}`);
    const c = await chat({ bad_words: [found.word], logprobs: true, return_tokens_as_token_ids: true });
    const got = c.choices[0].logprobs.content.map((e) => Number(e.token.slice('token_id:'.length)));
    assert.deepEqual(got.slice(0, found.first), ids.slice(0, found.first));
    for (const id of found.banned)
      assert.ok(!got.includes(id), `banned ${id} (${found.word}) came: ${got}`);
  });

  await check('skip_special_tokens: false writes a generated special token as its text; by default it is not text', async () => {
    const eos = (await post(url, '/detokenize', { tokens: [1] })).json.prompt;
    assert.equal(eos, '<｜end▁of▁sentence｜>');
    const only = { allowed_token_ids: [1], max_tokens: 3 };
    assert.equal((await chat({ ...only, skip_special_tokens: false })).choices[0].message.content, eos.repeat(3));
    assert.equal((await chat(only)).choices[0].message.content, '');
    // Not ignored, EOS ends the answer at once: stop, no stop reason, no text either way.
    const ended = await chat({ ...only, ignore_eos: false, skip_special_tokens: false });
    assert.equal(ended.choices[0].finish_reason, 'stop');
    assert.equal(ended.choices[0].stop_reason, null);
    assert.equal(ended.choices[0].message.content, '');
  });

  await check('legacy completions: stop_token_ids and stop_reason, streamed and not; token ids in logprobs', async () => {
    const body = { model: MODEL, prompt: 'Once upon a time', max_tokens: TOKENS, temperature: 1, seed: 5, ignore_eos: true,
                   logprobs: 1, return_tokens_as_token_ids: true };
    const free = await openai.completions.create(body);
    const got = free.choices[0].logprobs.tokens.map((t) => Number(t.slice('token_id:'.length)));
    const j = got.findIndex((id, i) => i >= 2 && !got.slice(0, i).includes(id));
    assert.ok(j > 0);
    const c = await openai.completions.create({ ...body, stop_token_ids: [got[j]] });
    assert.equal(c.choices[0].finish_reason, 'stop');
    assert.equal(c.choices[0].stop_reason, got[j]);
    // Legacy Completions lists the tokens that became text (the stop id did not).
    assert.deepEqual(c.choices[0].logprobs.tokens.map((t) => Number(t.slice('token_id:'.length))), got.slice(0, j));
    assert.equal(c.usage.completion_tokens, j + 1);
    const s = await openai.completions.create({ ...body, stop_token_ids: [got[j]], stream: true });
    let last;
    for await (const chunk of s)
      if (chunk.choices[0]?.finish_reason)
        last = chunk.choices[0];
    assert.equal(last.stop_reason, got[j]);
  });

  await check('a final assistant message is continued (Anthropic prefill, vLLM continue_final_message): the prompt ends with its text, the answer is what comes next', async () => {
    const anthropic = new Anthropic({ baseURL: url, apiKey: 'none', maxRetries: 0, timeout: 60000 });
    const question = [{ role: 'user', content: 'Write a haiku about the sea.' }];
    const prefill = 'Waves fold\n';
    // The prompt by hand: the question's generation prompt, then the prefill's tokens.
    const asked = (await post(url, '/tokenize', { model: MODEL, messages: question })).json.tokens;
    const prompt = asked.concat(await tokenize(prefill));
    const messages = [...question, { role: 'assistant', content: prefill }];
    const viaTokenize = await post(url, '/tokenize', { model: MODEL, messages, continue_final_message: true });
    assert.deepEqual(viaTokenize.json.tokens, prompt);
    const raw = await openai.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0 });
    const a = await anthropic.messages.create({ model: MODEL, max_tokens: 12, temperature: 0, messages });
    assert.equal(a.usage.input_tokens, prompt.length);
    assert.equal(a.content.map((b) => b.text).join(''), raw.choices[0].text);
    const c = await chat({ messages, continue_final_message: true, max_tokens: 12, temperature: 0, ignore_eos: false });
    assert.equal(c.usage.prompt_tokens, prompt.length);
    assert.equal(c.choices[0].message.content, raw.choices[0].text);
    // Without the flag, Chat reads the assistant message as a finished turn and answers anew.
    const anew = await chat({ messages, max_tokens: 12, temperature: 0, ignore_eos: false });
    assert.ok(anew.usage.prompt_tokens > prompt.length, `${anew.usage.prompt_tokens} vs ${prompt.length}`);
    // Refused: nothing to continue, both flags, a tool call to continue after.
    for (const extra of [{ messages: question, continue_final_message: true },
                         { messages, continue_final_message: true, add_generation_prompt: true }]) {
      const r = await post(url, '/v1/chat/completions', { ...base, ...extra });
      assert.equal(r.status, 400, JSON.stringify(r.json));
    }
    await assert.rejects(anthropic.messages.create({ model: MODEL, max_tokens: 5, messages: [...question,
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] }] }),
      (e) => e.status === 400 && /tool_use/.test(e.error?.error?.message));
  });

  await check('echo (vLLM Chat): the final assistant message leads the answer, streamed and not; a final user message is not echoed', async () => {
    const messages = [{ role: 'user', content: 'Write a haiku about the sea.' }, { role: 'assistant', content: 'Waves fold\n' }];
    const ask = { messages, continue_final_message: true, max_tokens: 12 };
    const plain = (await chat(ask)).choices[0].message.content;
    const echoed = (await chat({ ...ask, echo: true })).choices[0].message.content;
    assert.equal(echoed, 'Waves fold\n' + plain);
    let streamed = '';
    for await (const chunk of await chat({ ...ask, echo: true, stream: true }))
      streamed += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(streamed, echoed);
    const user = { messages: messages.slice(0, 1), max_tokens: 12 };
    assert.equal((await chat({ ...user, echo: true })).choices[0].message.content, (await chat(user)).choices[0].message.content);
  });

  await check('legacy completions keep the newlines an answer starts with (a raw prompt is continued, not answered)', async () => {
    // Only a newline may come: the answer is newlines, which a chat answer would trim.
    const nl = await tokenize('\n');
    assert.equal(nl.length, 1);
    const forced = await openai.completions.create({ model: MODEL, prompt: 'def f():', max_tokens: 2, temperature: 0,
                                                     allowed_token_ids: [nl[0]] });
    assert.equal(forced.choices[0].text, '\n\n');
  });

  await check('truncate_prompt_tokens keeps the prompt\'s last N tokens (after the template); -1 keeps what fits with the output', async () => {
    const words = (n) => Array.from({ length: n }, (_, i) => `w${(i * 7919) % 9973}`).join(' ');
    const messages = [{ role: 'user', content: words(300) }];
    const ids = (await post(url, '/tokenize', { model: MODEL, messages })).json.tokens;
    assert.ok(ids.length > 100);
    const cut = await chat({ messages, truncate_prompt_tokens: 40, max_tokens: 8, temperature: 0, ignore_eos: false });
    assert.equal(cut.usage.prompt_tokens, 40);
    const raw = await openai.completions.create({ model: MODEL, prompt: ids.slice(-40), max_tokens: 8, temperature: 0 });
    assert.equal(cut.choices[0].message.content, raw.choices[0].text);
    // Longer than the prompt: nothing cut.
    const whole = await chat({ messages, truncate_prompt_tokens: 5000, max_tokens: 2 });
    assert.equal(whole.usage.prompt_tokens, ids.length);
    // A prompt over the context: a 400 without, served with -1 (the last 40,960 - max_tokens).
    const huge = [{ role: 'user', content: words(42000) }];
    const over = await post(url, '/v1/chat/completions', { ...base, messages: huge, max_tokens: 4 });
    assert.equal(over.status, 400);
    const fitted = await chat({ messages: huge, truncate_prompt_tokens: -1, max_tokens: 4 });
    assert.equal(fitted.usage.prompt_tokens, 40960 - 4);
    // Legacy Completions, token ids: the last 3.
    const three = await openai.completions.create({ model: MODEL, prompt: ids.slice(0, 20), max_tokens: 1, truncate_prompt_tokens: 3 });
    assert.equal(three.usage.prompt_tokens, 3);
    const bad = await post(url, '/v1/chat/completions', { ...base, truncate_prompt_tokens: 50000 });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.param, 'truncate_prompt_tokens');
  });

  await check('predicted outputs (OpenAI prediction): the same text with a right, an edited or no prediction; a right one is accepted, and usage says so', async () => {
    const ask = { ...base, max_tokens: 64, ignore_eos: false };
    for (const sampling of [{ temperature: 0 }, { temperature: 0.8, seed: 21 }]) {
      const plainRun = await chat({ ...ask, ...sampling });
      const text = plainRun.choices[0].message.content;
      const n = plainRun.usage.completion_tokens;
      assert.equal(plainRun.usage.completion_tokens_details.accepted_prediction_tokens, 0);
      assert.equal(plainRun.usage.completion_tokens_details.rejected_prediction_tokens, 0);
      const right = await chat({ ...ask, ...sampling, prediction: { type: 'content', content: text } });
      assert.equal(right.choices[0].message.content, text);
      const d = right.usage.completion_tokens_details;
      // Most tokens come from accepted drafts (not all: the random model's tokens are not always
      // how the tokenizer spells their text again, so the prediction's ids differ here and there).
      assert.ok(d.accepted_prediction_tokens >= n / 2, JSON.stringify(right.usage));
      assert.ok(d.accepted_prediction_tokens < n, JSON.stringify(right.usage));
      const edited = text.slice(0, Math.floor(text.length / 3)) + ' an edit here ' + text.slice(Math.floor(text.length / 3));
      const e = await chat({ ...ask, ...sampling, prediction: { type: 'content', content: [{ type: 'text', text: edited }] } });
      assert.equal(e.choices[0].message.content, text);
      assert.ok(e.usage.completion_tokens_details.rejected_prediction_tokens > 0, JSON.stringify(e.usage));
      const s = await chat({ ...ask, ...sampling, prediction: { type: 'content', content: text }, stream: true });
      let streamed = '';
      for await (const chunk of s)
        streamed += chunk.choices[0]?.delta?.content ?? '';
      assert.equal(streamed, text);
    }
    const bad = await post(url, '/v1/chat/completions', { ...base, prediction: { type: 'diff', content: 'x' } });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error.param, /^prediction/);
  });

  await check('legacy completions suffix (DeepSeek FIM): the prompt is BOS, fim_begin, the text before, fim_hole, the text after, fim_end', async () => {
    // The ids of the FIM tokens from the tokenizer's own table (spec: 128800-128802), by spelling.
    const spelled = async (id) => (await post(url, '/detokenize', { tokens: [id] })).json.prompt;
    const fim = {};
    for (const id of [128800, 128801, 128802])
      fim[await spelled(id)] = id;
    const [hole, begin, end] = ['<｜fim▁hole｜>', '<｜fim▁begin｜>', '<｜fim▁end｜>'].map((s) => fim[s]);
    assert.ok(hole && begin && end, JSON.stringify(fim));
    const before = 'def area(r):\n    ', after = '\n    return result\n';
    const want = [0, begin, ...await tokenize(before), hole, ...await tokenize(after), end];
    const body = { model: MODEL, prompt: before, suffix: after, max_tokens: 8, temperature: 0 };
    // vLLM's prompt_logprobs lists the prompt's ids (keyed by id).
    const scored = await post(url, '/v1/completions', { ...body, prompt_logprobs: 0 });
    assert.equal(scored.status, 200, JSON.stringify(scored.json));
    assert.deepEqual(scored.json.choices[0].prompt_logprobs.map((p, i) => (p === null ? want[0] : Number(Object.keys(p)[0]))), want);
    const viaIds = await openai.completions.create({ ...body, suffix: undefined, prompt: want });
    const middle = await openai.completions.create(body);
    assert.equal(middle.usage.prompt_tokens, want.length);
    assert.equal(middle.choices[0].text, viaIds.choices[0].text);
    const refused = await post(url, '/v1/completions', { ...body, prompt: [1, 2] });
    assert.equal(refused.status, 400);
  });

  await check('bad values are 400s naming the field', async () => {
    const cases = [[{ stop_token_ids: [-1] }, 'stop_token_ids'], [{ stop_token_ids: 5 }, 'stop_token_ids'],
                   [{ stop_token_ids: [1e9] }, 'stop_token_ids'], [{ allowed_token_ids: [] }, 'allowed_token_ids'],
                   [{ allowed_token_ids: [4e9] }, 'allowed_token_ids'], [{ bad_words: [' '] }, 'bad_words'],
                   [{ bad_words: [3] }, 'bad_words'], [{ skip_special_tokens: 'no' }, 'skip_special_tokens'],
                   [{ include_stop_str_in_output: 1 }, 'include_stop_str_in_output'],
                   [{ truncate_prompt_tokens: 0 }, 'truncate_prompt_tokens'], [{ truncate_prompt_tokens: -2 }, 'truncate_prompt_tokens'],
                   [{ echo: 'yes' }, 'echo']];
    for (const [extra, field] of cases) {
      const r = await post(url, '/v1/chat/completions', { ...base, ...extra });
      assert.equal(r.status, 400, JSON.stringify(extra));
      assert.equal(r.json.error.type, 'invalid_request_error');
      assert.ok(r.json.error.param.startsWith(field), `${JSON.stringify(extra)}: ${JSON.stringify(r.json.error)}`);
    }
    // The server still answers.
    assert.equal((await chat({ max_tokens: 2 })).choices[0].message.role, 'assistant');
  });
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
}
verdict(logPath);
