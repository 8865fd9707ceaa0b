// Both decode nodes of a four-process cluster SIGKILLed at once under load: every greedy stream
// still completes, with the text an undisturbed server gives (the embedded default, one process).
// A request whose decode rank died is prefilled again with what it had generated, its decoder
// anchored at its own prompt (bounded mode, the default) on kernels whose bits depend on no batch,
// chunking or ISA, so the continuation is the same token for token. Every sixth stream asks for
// three seeded samples at temperature 0.8 (OpenAI's `n`): they share one prefill, then each
// sample that lost its rank is resubmitted alone and must continue its own random stream.
// Usage: node reroute.test.mjs /path/to/caf-launch
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { check, finish, results, startTwoDecodeCluster, streamChat, waitAnswering, waitFor } from './harness.mjs';

const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const STREAMS = 24, MAX_TOKENS = 128;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-reroute-'));
const { manifest, logPath, procs, cluster, one } = await startTwoDecodeCluster(exe, dir);

// Prompts of different lengths, all past one 128-token block (so the bounded decoder's window
// starts inside the prompt and a resubmission that did not anchor it would compute other
// logits), some past the indexer's top-k.
const prompts = Array.from({ length: STREAMS }, (_, i) =>
  Array.from({ length: 150 + ((i * 37) % 9) * 40 }, (_, j) => `w${(i * 131 + j * 7) % 997}`).join(' '));

// Stream i's sampling: greedy, or three samples of seed 1000 + i at temperature 0.8.
const sampling = (i) => (i % 6 === 3 ? { temperature: 0.8, n: 3, seed: 1000 + i } : { temperature: 0 });

async function complete(base, content, extra = { temperature: 0 }) {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, max_tokens: MAX_TOKENS, logprobs: true, ...extra,
                           messages: [{ role: 'user', content }] }) });
  return { status: r.status, json: await r.json() };
}

// A streamed request that reports how many content events of choice 0 it has seen so far.
async function stream(base, content, progress, i) {
  const o = await streamChat(base, { model: MODEL, max_tokens: MAX_TOKENS, logprobs: true, ...sampling(i),
                                     messages: [{ role: 'user', content }] }, () => progress[i]++);
  // Per choice: texts, finish reasons, [token, logprob] lists.
  return { status: o.status, done: o.done, text: o.choices.map((c) => c.text), finish: o.choices.map((c) => c.finish),
           logprobs: o.choices.map((c) => c.logprobs.map((e) => [e.token, e.logprob])) };
}

const ready = (base) => waitAnswering(base, () => complete(base, 'ping'));

try {
  await ready(one);
  await ready(cluster);
  const reference = [], referenceLogprobs = [];
  for (const [i, p] of prompts.entries()) {
    const r = await complete(one, p, sampling(i));
    assert.equal(r.status, 200, JSON.stringify(r.json));
    reference.push(r.json.choices.map((c) => c.message.content));
    referenceLogprobs.push(r.json.choices.map((c) => c.logprobs.content.map((e) => [e.token, e.logprob])));
  }
  await check(`${STREAMS} streams (greedy, and seeded n = 3 at temperature 0.8) survive both decode nodes SIGKILLed at once, with the undisturbed text`, async () => {
    const progress = new Array(STREAMS).fill(0);
    const runs = prompts.map((p, i) => stream(cluster, p, progress, i));
    // Kill once a quarter of the streams are well into their decode and far from their end: on a
    // quiet machine the first streams can finish before the last ones start, so "most have a few
    // tokens" alone may leave too few to cut (128 tokens each keeps them overlapping).
    const midDecode = () => progress.filter((n) => n >= 6 && n < MAX_TOKENS - 16).length;
    await waitFor('a quarter of the streams mid-decode', () => midDecode() >= STREAMS / 4,
                  { deadlineMs: 90000, everyMs: 5 });
    const pids = ['d0', 'd1'].map((n) => spawnSync('pgrep', ['-f', `${manifest} --node ${n}`]).stdout.toString().trim());
    assert.ok(pids.every((p) => /^\d+$/.test(p)), `one process per decode node: ${pids}`);
    const before = progress.slice();
    for (const p of pids) process.kill(Number(p), 'SIGKILL');
    const out = await Promise.all(runs);
    const log = fs.readFileSync(logPath, 'utf8');
    assert.match(log, /node=d0 dead/);
    assert.match(log, /node=d1 dead/);
    const cut = before.filter((n) => n > 0 && n < MAX_TOKENS).length;
    console.log(`     ${cut} streams were mid-decode at the kill; ${(log.match(/resubmitting/g) || []).length} resubmissions logged`);
    assert.ok(cut >= 4, 'enough streams were cut mid-decode');
    out.forEach((o, i) => {
      assert.equal(o.status, 200, `stream ${i}`);
      assert.ok(o.done, `stream ${i} ended with [DONE]`);
      assert.equal(o.finish.length, reference[i].length, `stream ${i}: every choice finished`);
      for (const f of o.finish)
        assert.ok(f === 'length' || f === 'stop', `stream ${i} finish_reason ${f}`);
      assert.deepEqual(o.text, reference[i], `stream ${i}: the text of every choice after the reroute`);
      // Tolerance 0: the resubmission's prefill recomputes exactly the undisturbed logits.
      assert.deepEqual(o.logprobs, referenceLogprobs[i], `stream ${i}: every token's log-probability after the reroute`);
    });
  });
} catch (e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}`);
}
await finish(procs, logPath, () => fs.rmSync(dir, { recursive: true, force: true }));
