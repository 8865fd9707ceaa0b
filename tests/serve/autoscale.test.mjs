// The autoscaler live with a ready pool (issue 17, DESIGN §6.5): a five-process loopback cluster
// (n0: controller + entrypoint + kvstore; p0: prefill; d0: decode; pool0, pool1: ready-pool
// nodes, `roles = ["pool"]`) under a load ramp, low -> high -> low. As prompts arrive the missed
// token rate and the decode requests in flight pass one instance's capacity ([autoscaler]
// sized for the tiny model), so the controller assigns a prefill and a decode instance to the
// pool nodes (they load the model and serve); when the load falls it gives them back: the
// prefill instance finishes what it holds, the decode instance drains with a 2 s grace and hands
// its unfinished requests with their KV to d0 (`deepinfer_handoffs_total`). Every stream, greedy
// or seeded sampled (temperature 0.8), equals its undisturbed run on the embedded default token
// for token, log-probabilities included; none is resubmitted; both nodes end idle in the pool.
// Usage: node autoscale.test.mjs /path/to/caf-launch
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { assertStreamsEqual, check, clusterManifest, finish, freePort, manifestNode, postChat, referenceRuns, results, startClusterAndReference, streamCounted, waitAnswering, waitFor } from './harness.mjs';

const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
// The ramp: a first wave that puts d0 past one instance's capacity, then (once the pool serves)
// a second wave of long streams; the first wave ends first, so the load falls while the second
// is still decoding, some of it on the pool's decode instance. The lengths are in decode steps,
// so they hold on any CPU: a first-wave stream outlasts the 2 s over which the wave arrives
// (500 tokens: over 5 s at ~10 ms a token, the fastest we run on), so more than one instance's
// 4 requests are in flight; a second-wave stream, started once the pool instance serves,
// outlasts the first wave plus the drain's grace (1200 tokens: over twice a first-wave stream).
// At 120 tokens a stream ended within the arrival span on a fast CPU and the ramp never passed
// one decode instance's capacity.
const FIRST = 6, SECOND = 4, FIRST_TOKENS = 500, SECOND_TOKENS = 1200, GRACE_S = 2;
const SCALER = `[autoscaler]
interval_seconds = 0.5
max_step = 1
headroom = 1.0
min_prefill_instances = 1
max_prefill_instances = 2
min_decode_instances = 1
max_decode_instances = 2
ready_pool = 0
prefill_missed_tokens_per_s = 400
decode_requests_per_instance = 4
queue_time_target_seconds = 60
decode_grace_seconds = ${GRACE_S}
`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-autoscale-'));
const ports = [];
for (let i = 0; i < 5; ++i) ports.push(await freePort());
const [clusterHttp, oneHttp] = [await freePort(), await freePort()];
const manifest = path.join(dir, 'cluster.toml');
fs.writeFileSync(manifest, clusterManifest(path.join(dir, 'kv-cluster'), [
  SCALER,
  manifestNode('n0', ports[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${clusterHttp}"\n`),
  manifestNode('p0', ports[1], ['prefill']),
  manifestNode('d0', ports[2], ['decode']),
  manifestNode('pool0', ports[3], ['pool']),
  manifestNode('pool1', ports[4], ['pool']),
]));
const logPath = path.join(dir, 'cluster.log');
const procs = startClusterAndReference(exe, manifest, logPath, oneHttp, path.join(dir, 'kv-one'));
const cluster = `http://127.0.0.1:${clusterHttp}`, one = `http://127.0.0.1:${oneHttp}`;

const STREAMS = FIRST + SECOND;
const maxTokens = (i) => (i < FIRST ? FIRST_TOKENS : SECOND_TOKENS);
// Distinct prompts of 2-3 blocks (every prompt token is a missed one).
const prompts = Array.from({ length: STREAMS }, (_, i) =>
  Array.from({ length: 260 + ((i * 37) % 5) * 20 }, (_, j) => `v${(i * 173 + j * 11) % 991}`).join(' '));
const sampling = (i) => (i % 2 === 0 ? { temperature: 0 } : { temperature: 0.8, seed: 2000 + i });
const entries = (content) => content.map((e) => [e.token, e.logprob, e.top_logprobs[0].token, e.top_logprobs[0].logprob]);
const body = (i, content) => ({ model: MODEL, ...sampling(i), max_tokens: maxTokens(i), logprobs: true, top_logprobs: 1,
                                messages: [{ role: 'user', content }] });

const complete = (base, i, content = prompts[i]) => postChat(base, body(i, content));
const stream = (base, i, progress) => streamCounted(base, body(i, prompts[i]), progress, i, entries);

const metrics = async () => (await fetch(cluster + '/metrics')).text();
const metric = (text, re) => { const m = text.match(re); return m ? Number(m[1]) : null; };
/// The pool node serving a running instance of `role`, or null.
const poolInstance = (text, role) => {
  const m = text.match(new RegExp(`^deepinfer_instance_state\\{instance="(pool\\d)/${role}",node="pool\\d",role="${role}",state="running"\\} 1$`, 'm'));
  return m ? m[1] : null;
};

try {
  const ready = (base) => waitAnswering(base, () => complete(base, 0, 'ping'));
  const reference = await referenceRuns(one, cluster, ready, STREAMS, (i) => complete(one, i));

  await check('idle, the autoscaler exports its targets and keeps both pool nodes unassigned', async () => {
    await waitFor('autoscaler targets on /metrics', async () => {
      const m = await metrics();
      return metric(m, /^deepinfer_autoscaler_target\{role="decode"\} (\S+)$/m) === 1
        && metric(m, /^deepinfer_autoscaler_target\{role="prefill"\} (\S+)$/m) === 1
        && metric(m, /^deepinfer_ready_pool_nodes (\S+)$/m) === 2;
    }, { deadlineMs: 30000, everyMs: 100, explain: metrics });
  });

  await check(`a load ramp adds a prefill and a decode instance from the ready pool and removes them after; ` +
              `the drained decode instance's requests finish on d0 with their KV; ${STREAMS} streams equal undisturbed`, async () => {
    const progress = new Array(STREAMS).fill(0);
    const runs = [];
    // Low -> high: the first wave, one stream every 400 ms (the missed-token rate stays above one
    // prefill instance's for a few decisions, long enough for the pool node to load the model).
    const pools = {};
    const look = async () => {
      const m = await metrics();
      for (const role of ['prefill', 'decode']) pools[role] ??= poolInstance(m, role);
    };
    const t0 = Date.now();
    for (let i = 0; i < FIRST; ++i) {
      runs.push(stream(cluster, i, progress));
      for (let k = 0; k < 8; ++k) { await look(); await new Promise((r) => setTimeout(r, 50)); }
    }
    await waitFor('a running decode instance on a pool node', async () => { await look(); return pools.decode; },
                  { deadlineMs: 60000, everyMs: 50, explain: metrics });
    const tUp = Date.now() - t0;
    // The second wave: long streams, while the first still decodes; the decode balancer puts
    // them on the least loaded rank, the new instance's.
    for (let i = FIRST; i < STREAMS; ++i) runs.push(stream(cluster, i, progress));
    const out = await Promise.all(runs);
    assert.ok(pools.prefill, 'a prefill instance ran on a pool node');
    assert.notEqual(pools.prefill, pools.decode, 'two pool nodes, one instance each');
    // High -> low: both instances go back to the pool.
    await waitFor('both pool nodes back in the ready pool', async () =>
      metric(await metrics(), /^deepinfer_ready_pool_nodes (\S+)$/m) === 2, { deadlineMs: 60000, everyMs: 100, explain: metrics });
    const m = await metrics();
    const log = fs.readFileSync(logPath, 'utf8');
    const moved = metric(m, /^deepinfer_handoffs_total (\S+)$/m) ?? 0;
    const handed = [...log.matchAll(/id=(\S+) handed off: (\d+) tokens so far/g)].map((x) => out.findIndex((o) => o.id === x[1]));
    const decisions = [...log.matchAll(/autoscaler: targets prefill (\d+) -> (\d+) decode (\d+) -> (\d+)/g)].map((x) => x.slice(1).join(''));
    console.log(`     pool decode up ${tUp} ms after the first arrival (prefill on ${pools.prefill}, decode on ${pools.decode}); ` +
                `decisions (prefill now,target decode now,target): ${decisions.join(' ')}; ${moved} handed off (streams ${handed})`);
    // The timeline from the log's own clock (n0 decides, the pool nodes start and drain).
    const at = (re) => { const x = log.match(re); return x ? Date.parse(x[1].replace(' ', 'T') + 'Z') : NaN; };
    const ts = '^(\\S+ \\S+) ';
    const t = {
      decide: at(new RegExp(`${ts}n0 .*autoscaler: node=${pools.decode} from the ready pool becomes a decode`, 'm')),
      running: at(new RegExp(`${ts}${pools.decode} .*instance=${pools.decode}/decode generation=1 serving`, 'm')),
      answered: at(new RegExp(`${ts}n0 .*autoscaler: instance=${pools.decode}/decode started`, 'm')),
      drain: at(new RegExp(`${ts}n0 .*autoscaler: the decode instance of node=${pools.decode} drains`, 'm')),
      handoff: at(new RegExp(`${ts}${pools.decode} .*handed off to`, 'm')),
      back: at(new RegExp(`${ts}n0 .*autoscaler: node=${pools.decode} is back in the ready pool`, 'm')),
      pdecide: at(new RegExp(`${ts}n0 .*autoscaler: node=${pools.prefill} from the ready pool becomes a prefill`, 'm')),
      prunning: at(new RegExp(`${ts}${pools.prefill} .*instance=${pools.prefill}/prefill generation=1 serving`, 'm')),
      pdrain: at(new RegExp(`${ts}n0 .*autoscaler: the prefill instance of node=${pools.prefill} drains`, 'm')),
      pback: at(new RegExp(`${ts}n0 .*autoscaler: node=${pools.prefill} is back in the ready pool`, 'm')),
    };
    console.log(`     decode: assign -> running ${t.running - t.decide} ms (answered ${t.answered - t.decide} ms); ` +
                `drain decided -> first handoff ${t.handoff - t.drain} ms -> back in the pool ${t.back - t.drain} ms; ` +
                `prefill: assign -> running ${t.prunning - t.pdecide} ms, drain -> back ${t.pback - t.pdrain} ms`);
    assert.match(log, new RegExp(`instance=${pools.decode}/decode drained`), 'the pool decode instance drained');
    assert.match(log, new RegExp(`node=${pools.decode} is back in the ready pool`), 'its node went back to the pool');
    assert.match(log, new RegExp(`node=${pools.prefill} is back in the ready pool`), 'the prefill node went back to the pool');
    assert.ok(moved > 0, 'deepinfer_handoffs_total > 0: the drained instance still held requests after its grace');
    assert.ok(handed.every((i) => i >= FIRST), `only second-wave streams were on the pool instance: ${handed}`);
    assert.equal((log.match(/resubmitting/g) || []).length, 0, 'no request fell back to a resubmission');
    assert.ok(!/pool\d exited/.test(log), 'the pool nodes stay up');
    assertStreamsEqual(out, reference, { sampling, entries });
  });

  await check('the pool serves again: a second ramp assigns a pool node once more', async () => {
    // The same node may be reassigned: its instance starts afresh (generation 1, model loaded).
    const progress = new Array(STREAMS).fill(0);
    const runs = [];
    for (let i = 0; i < FIRST; ++i) runs.push(stream(cluster, i, progress));
    await waitFor('a running decode instance on a pool node again', async () => poolInstance(await metrics(), 'decode'),
                  { deadlineMs: 60000, everyMs: 50, explain: metrics });
    const out = await Promise.all(runs);
    out.forEach((o, i) => assert.equal(o.text, reference[i].json.choices[0].message.content, `stream ${i}: the text`));
  });
} catch (e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}`);
}
// A failed run keeps its folder (manifest, every node's log) for a look.
await finish(procs, logPath, () => (results.every(([, ok]) => ok) ? fs.rmSync(dir, { recursive: true, force: true })
                                                                  : console.log(`kept ${dir}`)));
