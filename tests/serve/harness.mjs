// What the serve tests and benches (tests/serve/, bench/serve/) share: a free loopback port, the
// official API clients, an embedded-default server on a fresh KV root, a loopback cluster
// manifest, named checks that record pass / fail and keep going, so one run reports every broken
// behaviour, and waits on a state with a deadline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

// Ports this process was handed: the OS may hand a closed one out again, and a manifest with two
// nodes on one port is refused.
const portsHanded = new Set();

/// A seeded generator of numbers in [0, 1) (mulberry32), so one seed is one draw (a chaos
/// schedule, a fuzz corpus), and `pick` from it.
export function seededRandom(seed) {
  let state = seed >>> 0;
  const rand = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { rand, pick: (xs) => xs[Math.floor(rand() * xs.length)] };
}

export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    });
    if (!portsHanded.has(port)) {
      portsHanded.add(port);
      return port;
    }
  }
}

/// The official API clients `packages` (e.g. ['openai', '@anthropic-ai/sdk']) from the cache that
/// scripts/prepare_api_clients.sh fills; exits 77 (CTest's skip) saying so when one is missing.
export function apiClients(packages) {
  const cache = process.env.DEEPINFER_CACHE || path.join(os.homedir(), '.cache', 'deepinfer');
  const clients = path.join(cache, 'api-clients', 'node_modules');
  if (!packages.every((p) => fs.existsSync(path.join(clients, p)))) {
    console.log(`skipped: API clients missing in ${clients}; run scripts/prepare_api_clients.sh`);
    process.exit(77);
  }
  const require = createRequire(path.join(clients, 'x.js'));
  return packages.map((p) => require(p));
}

/// Spawns the embedded default (`exe --http`) on a free loopback port with a fresh, private KV
/// root (`kvPrefix` names its temp folder) and `flags` after the common ones; its output goes
/// to `logPath` (or nowhere). The server is not up yet: `serverUp` waits for it.
export async function startServer(exe, { flags = [], kvPrefix = 'deepinfer-serve-kv-', logPath, name = 'caf-launch' } = {}) {
  const port = await freePort();
  const kvRoot = fs.mkdtempSync(path.join(os.tmpdir(), kvPrefix));
  const log = logPath ? fs.openSync(logPath, 'w') : 'pipe';
  const proc = spawn(exe, ['--http', `127.0.0.1:${port}`, '--log-level', 'warn', '--kv-root', kvRoot, ...flags],
                     { stdio: ['ignore', log, log] });
  const s = { name, port, base: `http://127.0.0.1:${port}`, kvRoot, logPath, proc, exited: false, exit: '', tail: '' };
  // Without a log file the last few KiB of output are kept, so an early exit says why.
  for (const out of [proc.stdout, proc.stderr])
    out?.on('data', (d) => { s.tail = (s.tail + d).slice(-4096); });
  proc.on('exit', (code, signal) => { s.exited = true; s.exit = signal ? `signal ${signal}` : `exit code ${code}`; });
  return s;
}

/// Waits until `s` (from `startServer`) answers /health; returns the ms that took. Throws when it
/// exits first or is not up within two minutes.
export function serverUp(s) {
  return waitFor(`${s.name} /health`, async () => {
    if (s.exited)
      throw new Error(`${s.name} exited early (${s.exit})` + (s.logPath ? ` (log: ${s.logPath})` : `; its output ended:\n${s.tail}`));
    try { return (await fetch(s.base + '/health')).ok; } catch { return false; } // not up yet
  }, { deadlineMs: 120000, everyMs: 50 });
}

/// Stops `s` (SIGINT, SIGKILL after `graceMs`), waits for its exit and removes its KV root.
export async function stopServer(s, graceMs = 5000) {
  s.proc.kill('SIGINT');
  await new Promise((r) => {
    if (s.exited) r();
    else { s.proc.on('exit', r); setTimeout(() => { s.proc.kill('SIGKILL'); r(); }, graceMs); }
  });
  fs.rmSync(s.kvRoot, { recursive: true, force: true });
}

/// One `[[nodes]]` table of a loopback manifest; `extra` holds its further lines.
export const manifestNode = (name, port, roles, extra = '') =>
  `[[nodes]]\nname = "${name}"\nhost = "127.0.0.1"\nport = ${port}\nroles = ${JSON.stringify(roles)}\n${extra}`;

/// A loopback cluster manifest on the tiny model, with heartbeats, timeouts and restarts fast
/// enough for a test to kill nodes; `nodes` are `manifestNode` tables.
export const clusterManifest = (kvRoot, nodes, { model = 'tiny' } = {}) => `model = ${JSON.stringify(model)}
log_level = "info"
[caf]
heartbeat_interval_ms = 250
connection_timeout_ms = 1500
[kv]
root = "${kvRoot}"
[supervision]
restart_delay_ms = 200
${nodes.join('')}`;

/// A one-process manifest on the tiny model: one node `local` with every serving role, `ranks`
/// ranks per instance (one EP group each), the admin routes on, HTTP on `http`; `tables` are
/// further TOML tables (`[balancer.decode]` EP keys, `[supervision]`, ...).
export const singleNodeManifest = ({ kvRoot, port, http, ranks, logLevel = 'info', tables = '' }) => `model = "tiny"
log_level = "${logLevel}"
[http]
admin = true
[kv]
root = "${kvRoot}"
${tables}
${manifestNode('local', port, ['controller', 'entrypoint', 'prefill', 'decode', 'kvstore'], `ranks = ${ranks}\nhttp = "127.0.0.1:${http}"\n`)}`;

/// Starts the cluster of `manifest` (every node's output to `logPath`) and, beside it, the
/// embedded default on port `oneHttp` with its own KV root `oneKvRoot`: the reference whose
/// answers the cluster's must equal. Both are returned for `finish`.
export function startClusterAndReference(exe, manifest, logPath, oneHttp, oneKvRoot, { model = 'tiny' } = {}) {
  return [
    spawn(exe, ['--manifest', manifest], { stdio: ['ignore', fs.openSync(logPath, 'w'), fs.openSync(logPath, 'a')] }),
    spawn(exe, ['--http', `127.0.0.1:${oneHttp}`, '--log-level', 'warn', '--kv-root', oneKvRoot,
                ...(model === 'tiny' ? [] : ['--model', model])],
          { stdio: ['ignore', 'ignore', 'ignore'] }),
  ];
}

/// Streams one Chat Completions request (`body` as JSON, `stream: true` added) from `base`,
/// calling `onContent()` at every content delta: its status, id, text, whether `[DONE]` came, its
/// finish_reason and every `logprobs.content` entry in order.
export async function streamChat(base, body, onContent = () => {}) {
  const r = await fetch(base + '/v1/chat/completions', {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '', id = null, done = false;
  // Per choice index (`n`): its text, finish reason and log-probability entries.
  const choices = [];
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    let at;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, at);
      buf = buf.slice(at + 2);
      if (!event.startsWith('data: ')) continue;
      const data = event.slice(6);
      if (data === '[DONE]') { done = true; continue; }
      const chunk = JSON.parse(data);
      id ??= chunk.id;
      for (const c of chunk.choices ?? []) {
        const k = (choices[c.index] ??= { text: '', finish: null, logprobs: [] });
        if (c.delta?.content) { k.text += c.delta.content; if (c.index === 0) onContent(); }
        k.logprobs.push(...(c.logprobs?.content ?? []));
        if (c.finish_reason) k.finish = c.finish_reason;
      }
    }
  }
  const first = choices[0] ?? { text: '', finish: null, logprobs: [] };
  return { status: r.status, id, text: first.text, done, finish: first.finish, logprobs: first.logprobs, choices };
}

/// A four-process loopback cluster under `dir` (n0: controller, entrypoint, kvstore; p0: prefill
/// of `prefillRanks` ranks; d0, d1: decode of one rank each; `tables`: more TOML for its
/// manifest; `model`: a model folder instead of "tiny", for both) and beside it the embedded default, the reference (`startClusterAndReference`). Not
/// up yet. Its manifest path, log path, processes (for `finish`) and both HTTP bases.
export async function startTwoDecodeCluster(exe, dir, { prefillRanks = 2, tables = '', model = 'tiny' } = {}) {
  const ports = [await freePort(), await freePort(), await freePort(), await freePort()];
  const [clusterHttp, oneHttp] = [await freePort(), await freePort()];
  const manifest = path.join(dir, 'cluster.toml');
  fs.writeFileSync(manifest, clusterManifest(path.join(dir, 'kv-cluster'), [
    tables,
    manifestNode('n0', ports[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${clusterHttp}"\n`),
    manifestNode('p0', ports[1], ['prefill'], `ranks = ${prefillRanks}\n`),
    manifestNode('d0', ports[2], ['decode'], 'ranks = 1\n'),
    manifestNode('d1', ports[3], ['decode'], 'ranks = 1\n'),
  ], { model }));
  const logPath = path.join(dir, 'cluster.log');
  const procs = startClusterAndReference(exe, manifest, logPath, oneHttp, path.join(dir, 'kv-one'), { model });
  return { manifest, logPath, procs, cluster: `http://127.0.0.1:${clusterHttp}`, one: `http://127.0.0.1:${oneHttp}` };
}

/// POSTs one Chat Completions `body` to `base`: its status and parsed JSON.
export async function postJson(base, route, body) {
  const r = await fetch(base + route, { method: 'POST', headers: { 'content-type': 'application/json' },
                                         body: JSON.stringify(body) });
  return { status: r.status, json: await r.json() };
}

export const postChat = (base, body) => postJson(base, '/v1/chat/completions', body);

/// Streams `body` (`streamChat`), counting its content deltas in `progress[i]`, its
/// log-probability entries mapped by `entries`. A stream the server cuts (its connection closed
/// before [DONE]) is `{ status: 'cut', ... }`, a lost stream to assert on, not a crash.
export async function streamCounted(base, body, progress, i, entries) {
  try {
    const o = await streamChat(base, body, () => progress[i]++);
    return { ...o, logprobs: entries(o.logprobs) };
  } catch (e) {
    return { status: 'cut', error: String(e.cause ?? e), done: false, progress: progress[i] };
  }
}

/// Asserts that every stream of `out` (from `streamChat`, its log-probabilities mapped with
/// `entries`) ended as its undisturbed run `reference[i]` (a chat completion body) did: the
/// finish_reason, the text and every log-probability entry (`entries` of the body's
/// logprobs.content); with `delivered`, also status 200 and [DONE]. `sampling(i)` names the kind.
export function assertStreamsEqual(out, reference, { sampling, entries, delivered = true }) {
  out.forEach((o, i) => {
    const want = reference[i].json.choices[0];
    if (delivered) {
      assert.equal(o.status, 200, `stream ${i}`);
      assert.ok(o.done, `stream ${i} ended with [DONE]`);
    }
    assert.equal(o.finish, want.finish_reason, `stream ${i} finish_reason`);
    assert.equal(o.text, want.message.content, `stream ${i} (${sampling(i).temperature ? 'sampled' : 'greedy'}): the text`);
    assert.deepEqual(o.logprobs, entries(want.logprobs.content), `stream ${i}: every token's log-probabilities`);
  });
}

export const results = [];

export async function check(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push([name, true]);
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([name, false]);
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}

/// Records a failure outside the checks (the server did not start, a check threw past `check`).
export function setupFailed(e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}`);
}

/// Removes the server log at `logPath` and its siblings `logPath.*` (the logs of further servers
/// a test names after it): a passing run leaves nothing in the temp folder.
export function removeLogs(logPath) {
  const dir = path.dirname(logPath), base = path.basename(logPath);
  for (const f of fs.readdirSync(dir))
    if (f === base || f.startsWith(base + '.'))
      fs.rmSync(path.join(dir, f), { force: true });
}

/// Prints the tally and, when a check failed, the last warnings and errors of the server log at
/// `logPath` (failed requests are logged at warn with their status and reason) and keeps it;
/// a passing run removes it (`removeLogs`). Exits with the verdict.
export function verdict(logPath) {
  const failed = results.filter(([, ok]) => !ok).length;
  console.log(`${results.length - failed}/${results.length} passed`);
  if (failed) {
    const said = fs.readFileSync(logPath, 'utf8').split('\n').filter((l) => /warn|error|crit/.test(l));
    console.log(`server log ${logPath} (kept), last of ${said.length} warn/error lines:\n` + said.slice(-30).join('\n'));
  } else {
    removeLogs(logPath);
  }
  process.exit(failed ? 1 : 0);
}

/// Polls `probe` every `everyMs` until it returns a truthy value; returns the ms that took, or
/// throws naming `what` after `deadlineMs` (with `probe`'s last value and `explain()` if given).
/// Deadlines only bound a broken run: size them for a loaded 2-core machine, never for speed.
export async function waitFor(what, probe, { deadlineMs = 60000, everyMs = 20, explain } = {}) {
  const t0 = Date.now();
  for (;;) {
    if (await probe()) return Date.now() - t0;
    if (Date.now() - t0 > deadlineMs)
      throw new Error(`no ${what} within ${deadlineMs / 1000} s` + (explain ? `:\n${await explain()}` : ''));
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/// Waits until `base` answers `ping()` (a request with the prompt "ping") with 200: membership,
/// instances and model loads are done. 90 s, for a loaded 2-core machine.
export function waitAnswering(base, ping) {
  return waitFor(`an answer from ${base}`, async () => {
    try { return (await ping()).status === 200; } catch { return false; }
  }, { deadlineMs: 90000, everyMs: 100 });
}

/// Waits until the one-process reference `one` and `cluster` answer (`ready(base)`), then makes the
/// undisturbed runs on `one`, all at once (the kernels' bits depend on no batch): `run(i)` for i
/// below `count`, each checked to be a 200. Returns them, in order.
export async function referenceRuns(one, cluster, ready, count, run) {
  const t0 = Date.now();
  await Promise.all([ready(one), ready(cluster)]);
  const reference = await Promise.all(Array.from({ length: count }, (_, i) => run(i)));
  reference.forEach((r, i) => assert.equal(r.status, 200, `reference ${i}: ${JSON.stringify(r.json)}`));
  console.log(`     cluster and reference up, ${count} reference runs done in ${Date.now() - t0} ms`);
  return reference;
}

/// Stops the servers a test started (SIGINT, then SIGKILL after 8 s), prints the last warnings
/// and errors of `logPath` when a check failed, the tally, runs `cleanup`, and exits with the
/// verdict.
/// Ends a seeded run against one server (the fuzz tests): stops it, then removes its log's
/// directory when every check passed, or prints the log's last warnings (each failed request's
/// status and reason) and keeps it, with the seed that replays the run.
export async function finishSeeded(server, logPath, seed) {
  await stopServer(server);
  const ok = results.every(([, passed]) => passed);
  await finish([], ok ? null : logPath, () => {
    if (ok) fs.rmSync(path.dirname(logPath), { recursive: true, force: true });
    else console.log(`kept ${logPath}; fuzz seed ${seed}`);
  });
}

export async function finish(procs, logPath, cleanup = () => {}) {
  for (const p of procs) p.kill('SIGINT');
  await Promise.all(procs.map((p) => new Promise((r) => {
    if (p.exitCode !== null) r();
    else { p.on('exit', r); setTimeout(() => { p.kill('SIGKILL'); r(); }, 8000); }
  })));
  const failed = results.filter(([, ok]) => !ok).length;
  if (failed && logPath) {
    const fs = await import('node:fs');
    console.log(fs.readFileSync(logPath, 'utf8').split('\n').filter((l) => /warn|error|crit/.test(l)).slice(-30).join('\n'));
  }
  console.log(`${results.length - failed}/${results.length} passed`);
  cleanup();
  process.exit(failed ? 1 : 0);
}
