// Images through a split cluster (issue 21): an entrypoint node, a prefill node, a decode node and
// two vision nodes, each its own process. The entrypoint's vision balancer sends every image to a
// vision node over CAF (vision_job / vision_result serialized across processes); the answers
// equal the one-process embedded default's, both vision nodes get images, and nothing stays in
// flight. The split entrypoint parses every body on its SCHED_IDLE thread (`[vision]
// background_body_bytes = 1`), the embedded default on its CAF workers.
// Usage: node vision_split.test.mjs /path/to/caf-launch
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { check, clusterManifest, finish, freePort, manifestNode, startClusterAndReference } from './harness.mjs';
import { dataUri, png } from './images.mjs';

const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-vision-split-'));
const ports = [];
for (let i = 0; i < 5; ++i) ports.push(await freePort());
const [splitHttp, oneHttp] = [await freePort(), await freePort()];
const manifest = path.join(dir, 'cluster.toml');
const lastCpu = os.cpus().length - 1;
fs.writeFileSync(manifest, clusterManifest(path.join(dir, 'kv-split'), [
  manifestNode('n0', ports[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${splitHttp}"\n`),
  manifestNode('p0', ports[1], ['prefill'], 'ranks = 1\n'),
  manifestNode('d0', ports[2], ['decode'], 'ranks = 1\n'),
  manifestNode('v0', ports[3], ['vision']),
  // v1 is kept on the last CPU (the manifest's `cpus`), as a vision node on cores of its own.
  manifestNode('v1', ports[4], ['vision'], `cpus = "${lastCpu}"\n`),
// Every body of the split cluster is parsed on the entrypoint's lowered-priority thread (the
// default takes only bodies of 1 MiB or more there): the same answers, and its errors too.
]).replace('log_level = "info"', 'log_level = "info"\n[vision]\nbackground_body_bytes = 1'));
const logPath = path.join(dir, 'split.log');
const procs = startClusterAndReference(exe, manifest, logPath, oneHttp, path.join(dir, 'kv-one'));
const split = `http://127.0.0.1:${splitHttp}`;
const one = `http://127.0.0.1:${oneHttp}`;

const ask = async (base, img) => {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, temperature: 0, max_tokens: 12, messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUri(img) } }, { type: 'text', text: 'What is this?' }] }] }) });
  return { status: r.status, json: await r.json() };
};

async function ready(base, needVision) {
  const t0 = Date.now();
  for (;;) {
    try {
      const text = await (await fetch(base + '/metrics')).text();
      const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'ping' }] }) });
      // Both vision instances are running in the controller's view (a starting one already
      // counts its rank, but the entrypoints route images only to running ones).
      const vision = ['v0', 'v1'].every((n) => text.includes(`deepinfer_instance_healthy_ranks{instance="${n}/vision"} 1`) &&
        new RegExp(`^deepinfer_instance_state\\{[^}]*instance="${n}/vision"[^}]*state="running"[^}]*\\} 1`, 'm').test(text));
      if (r.status === 200 && (!needVision || vision)) return Date.now() - t0;
    } catch { /* not up yet */ }
    if (Date.now() - t0 > 120000) throw new Error(`${base} not serving within 120 s (log: ${logPath})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

try {
  console.log(`five-process manifest ready in ${await ready(split, true)} ms, embedded default in ${await ready(one, false)} ms`);
  await check('images encoded on remote vision nodes: answers equal the one-process default, both nodes used', async () => {
    for (let i = 0; i < 10; ++i) {
      const img = png(64 + 32 * (i % 4), 64, 100 + i);
      const [a, b] = [await ask(split, img), await ask(one, img)];
      assert.equal(a.status, 200, JSON.stringify(a.json));
      assert.equal(a.json.choices[0].message.content, b.json.choices[0].message.content, `image ${i}`);
    }
    const text = await (await fetch(split + '/metrics')).text();
    const queued = text.match(/^deepinfer_vision_queue_seconds_count(?:\{\})? (\S+)$/m);
    assert.ok(queued && Number(queued[1]) >= 10, `every image went to a vision rank: ${queued?.[1]}`);
    const nodes = [...text.matchAll(/^deepinfer_vision_patches_in_flight\{node="([^"]+)",rank="\d+"\} (\S+)$/gm)];
    const seen = new Set(nodes.map((m) => m[1]));
    assert.ok(seen.has('v0') && seen.has('v1'), `images on both vision nodes: ${[...seen]}`);
    for (const m of nodes) assert.equal(Number(m[2]), 0, m[0]);
    // The vision nodes encoded them: a vision rank without the encoder refuses each image (and
    // the prefill rank encodes it, which gives the same answers and would hide it).
    const refused = fs.readFileSync(logPath, 'utf8').split('\n').filter((l) => l.includes('vision rank refused'));
    assert.equal(refused.length, 0, `vision ranks refused images: ${refused[0]}`);
  });
  await check("a malformed body parsed in the background is the API's 400, and the entrypoint goes on", async () => {
    const r = await fetch(split + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: '{"model": "' + MODEL + '", "messages": [' });
    const body = await r.json();
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(body.error?.type, 'invalid_request_error', JSON.stringify(body));
    const m = await fetch(split + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-model', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }) });
    const mb = await m.json();
    assert.equal(m.status, 404, JSON.stringify(mb));
    assert.equal(mb.type, 'error', JSON.stringify(mb));
    const ok = await ask(split, png(64, 64, 7));
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
  });
  await check('the vision nodes encode, and the entrypoint parses large bodies, on SCHED_IDLE threads; their other threads keep the normal policy; a node with `cpus` runs on those CPUs only', async () => {
    // /proc/PID/task/TID/stat: field 41 is the scheduling policy (0 SCHED_OTHER, 5 SCHED_IDLE);
    // fields are counted after the command name's closing parenthesis (field 2).
    const policy = (pid, tid) => {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[41 - 3]);
    };
    const visionPids = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        const args = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return args.includes(manifest) && /^v[01]$/.test(args[args.indexOf('--node') + 1] ?? '');
      } catch { return false; }
    });
    assert.equal(visionPids.length, 2, `two vision node processes: ${visionPids}`);
    for (const pid of visionPids) {
      const policies = fs.readdirSync(`/proc/${pid}/task`).map((tid) => policy(pid, tid));
      assert.ok(policies.includes(5), `process ${pid}: an encoder thread under SCHED_IDLE (${policies})`);
      assert.ok(policies.includes(0), `process ${pid}: CAF's threads under SCHED_OTHER (${policies})`);
    }
    // The entrypoint's body parser too (the controller's node, n0).
    const n0 = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        const args = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return args.includes(manifest) && args[args.indexOf('--node') + 1] === 'n0';
      } catch { return false; }
    });
    assert.equal(n0.length, 1, `one entrypoint node process: ${n0}`);
    const policies = fs.readdirSync(`/proc/${n0[0]}/task`).map((tid) => policy(n0[0], tid));
    assert.ok(policies.includes(5), `the entrypoint parses large bodies on a SCHED_IDLE thread (${policies})`);

    // `cpus = "N"` keeps every thread of v1 (CAF's, the encoders', the model's) on CPU N; v0,
    // without the key, may use every CPU the test may.
    const allowed = (pid, tid) => /Cpus_allowed_list:\s*(\S+)/.exec(fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8'))[1];
    const mine = /Cpus_allowed_list:\s*(\S+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1];
    for (const pid of visionPids) {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const want = args[args.indexOf('--node') + 1] === 'v1' ? String(lastCpu) : mine;
      const lists = [...new Set(fs.readdirSync(`/proc/${pid}/task`).map((tid) => allowed(pid, tid)))];
      assert.deepEqual(lists, [want], `node ${args[args.indexOf('--node') + 1]}: every thread on CPUs ${want}`);
    }
  });
} catch (e) {
  await check('setup', () => { throw e; });
}
await finish(procs, logPath, () => fs.rmSync(dir, { recursive: true, force: true }));
