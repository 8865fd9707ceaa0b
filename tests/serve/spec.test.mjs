// Speculative decoding end to end (issue 18): one tiny model with a distilled draft head served
// four times, with --speculative off, fixed and variable (asynchronous scheduling, the default)
// and variable with --async-scheduling off; the official openai client's greedy answers
// (streamed and not, and with stop strings taken from the middle of an answer, so they land
// inside accepted drafts) must be the same text in all four, and the speculating servers
// count their drafts under vLLM's metric names; every decode rank reports its idle fraction.
// Usage: node spec.test.mjs /path/to/caf-launch /path/to/deepinfer-mkmodel /path/to/deepinfer-distill-draft
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, waitFor } from './harness.mjs';

const [OpenAI] = apiClients(['openai']);
const MODEL = 'deepseek-v4.1-flash';
const [exe, mkmodel, distill] = process.argv.slice(2);
const logPath = path.join(os.tmpdir(), `deepinfer-spec-test-${process.pid}.log`);
const modelDir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-spec-model-'));
const servers = [];

function metric(text, name) {
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name + '{') || line.startsWith(name + ' ')) sum += Number(line.trim().split(/\s+/).pop());
  return sum;
}

try {
  execFileSync(mkmodel, ['--config', 'tiny', '--seed', '7', '--out', modelDir], { stdio: 'ignore' });
  // A short distillation: enough for drafts to be accepted (the equality below must hold for
  // any head; acceptance makes it exercise multi-token steps).
  console.log(execFileSync(distill, ['--model', modelDir, '--prompts', '16', '--tokens', '48', '--eval-prompts', '4'],
                           { encoding: 'utf8' }).trim());
  const modes = [['off', []], ['fixed', []], ['variable', []], ['variable-sync', ['--async-scheduling', 'off']]];
  for (const [name, extra] of modes)
    servers.push(await startServer(exe, { flags: ['--model', modelDir, '--speculative', name.split('-')[0], ...extra],
                                          name, logPath: name === 'variable' ? logPath : undefined,
                                          kvPrefix: `deepinfer-spec-kv-${name}-` }));
  for (const s of servers) await serverUp(s);
  const clients = servers.map((s) => new OpenAI({ baseURL: s.base + '/v1', apiKey: 'none', maxRetries: 0,
                                                 timeout: 120000 }));
  const prompts = ['Count to ten.', 'Write a haiku about rain.', 'What is the capital of France?',
                   'List three colours and why they matter to painters, at length.', 'Hi',
                   'Explain speculative decoding to a child.', 'x'.repeat(300), 'Tell me a story about a fox.'];

  await check('greedy text is the same with --speculative off, fixed and variable, async scheduling on and off', async () => {
    for (const [i, p] of prompts.entries()) {
      const body = { model: MODEL, messages: [{ role: 'user', content: p }], max_tokens: 24 + 8 * (i % 4), temperature: 0 };
      const texts = await Promise.all(clients.map(async (c) => (await c.chat.completions.create(body)).choices[0].message.content));
      assert.equal(texts[1], texts[0], `fixed differs on prompt ${i}`);
      assert.equal(texts[2], texts[0], `variable differs on prompt ${i}`);
      assert.equal(texts[3], texts[0], `variable with synchronous scheduling differs on prompt ${i}`);
    }
  });

  await check('streamed greedy text is the same in every mode, all at once', async () => {
    const one = async (c, p) => {
      let text = '';
      const stream = await c.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: p }],
                                                      max_tokens: 40, temperature: 0, stream: true });
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      return text;
    };
    // Concurrent requests: they join and leave the speculating batch at different steps.
    const all = await Promise.all(clients.map((c) => Promise.all(prompts.map((p) => one(c, p)))));
    for (const other of all.slice(1)) assert.deepEqual(other, all[0]);
  });

  await check('a stop string inside an answer ends it at the same place in every mode', async () => {
    let cut = 0;
    for (const p of prompts.slice(0, 5)) {
      const body = { model: MODEL, messages: [{ role: 'user', content: p }], max_tokens: 40, temperature: 0 };
      const full = (await clients[0].chat.completions.create(body)).choices[0].message.content;
      if (full.length < 12) continue;
      const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
      const res = await Promise.all(clients.map((c) => c.chat.completions.create({ ...body, stop: [stop] })));
      const texts = res.map((r) => r.choices[0].message.content);
      assert.ok(texts[0].length < full.length, 'the stop string cut the answer');
      for (const t of texts.slice(1)) assert.equal(t, texts[0]);
      assert.deepEqual(res.map((r) => r.choices[0].finish_reason), res.map(() => 'stop'));
      ++cut;
    }
    assert.ok(cut >= 3, `only ${cut} answers were long enough to cut`);
  });

  await check('speculating servers count drafts under vLLM names; off counts none', async () => {
    // A request a stop string ended may still be stepping on its decode rank until the cancel
    // lands, and a step's counters are not one atomic update: read them once every rank is idle.
    const scrape = (s) => fetch(s.base + '/metrics').then((r) => r.text());
    for (const s of servers)
      await waitFor(`${s.name}: decode ranks idle`, async () => metric(await scrape(s), 'deepinfer_rank_active_sequences') === 0,
                    { deadlineMs: 30000 });
    const texts = await Promise.all(servers.map(scrape));
    assert.equal(metric(texts[0], 'vllm:spec_decode_num_draft_tokens_total'), 0);
    for (const t of texts.slice(1)) {
      const drafts = metric(t, 'vllm:spec_decode_num_drafts_total');
      const tokens = metric(t, 'vllm:spec_decode_num_draft_tokens_total');
      const accepted = metric(t, 'vllm:spec_decode_num_accepted_tokens_total');
      const perPos = metric(t, 'vllm:spec_decode_num_accepted_tokens_per_pos_total');
      assert.ok(drafts > 0 && tokens >= drafts, `drafts ${drafts}, draft tokens ${tokens}`);
      assert.ok(accepted > 0, 'some drafts were accepted');
      assert.equal(perPos, accepted, 'the per-position counts add up to the accepted tokens');
    }
    for (const [i, t] of texts.entries()) {
      const idle = t.split('\n').filter((l) => l.startsWith('deepinfer_decode_idle_fraction{'))
        .map((l) => Number(l.trim().split(/\s+/).pop()));
      assert.ok(idle.length > 0 && idle.every((x) => x >= 0 && x < 1), `idle fractions ${idle}`);
      console.log(`     ${servers[i].name}: deepinfer_decode_idle_fraction ${idle.map((x) => x.toFixed(3)).join(' ')}`);
    }
  });
} catch (e) {
  setupFailed(e);
} finally {
  for (const s of servers) await stopServer(s);
  fs.rmSync(modelDir, { recursive: true, force: true });
}
verdict(logPath);
