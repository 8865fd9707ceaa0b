// The status page at `/` (issue 20) in a real browser: headless Debian Chromium, driven over the
// DevTools protocol, loads the page of a three-node loopback cluster, shows every node and
// instance, and updates by itself (no reload) after the decode node is SIGKILLed. A screenshot
// before and after is kept (the paths are printed).
// Usage: node status.test.mjs /path/to/caf-launch
import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { check, clusterManifest, finish, freePort, manifestNode, results, waitFor } from './harness.mjs';

const exe = process.argv[2];
const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
if (!chromium) {
  console.log('skipped: Debian chromium is not installed (scripts/bootstrap.sh installs it: apt-get install chromium)');
  process.exit(77);
}

/// A minimal DevTools-protocol client over one WebSocket (Node 20 has no WebSocket client):
/// `send(method, params)` resolves with the result.
function devtools(wsUrl) {
  const u = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    const key = crypto.randomBytes(16).toString('base64');
    const pending = new Map();
    let buf = Buffer.alloc(0), open = false, nextId = 1, parts = [];
    sock.on('error', (e) => { if (!open) reject(e); for (const p of pending.values()) p.reject(e); });
    sock.on('connect', () => sock.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\n` +
      `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`));
    const client = {
      send(method, params = {}) {
        const id = nextId++;
        const data = Buffer.from(JSON.stringify({ id, method, params }));
        const mask = crypto.randomBytes(4);
        const head = data.length < 126 ? Buffer.from([0x81, 0x80 | data.length])
          : data.length < 65536 ? Buffer.from([0x81, 0x80 | 126, data.length >> 8, data.length & 255])
          : (() => { const h = Buffer.alloc(10); h[0] = 0x81; h[1] = 0x80 | 127; h.writeBigUInt64BE(BigInt(data.length), 2); return h; })();
        for (let i = 0; i < data.length; ++i) data[i] ^= mask[i & 3];
        sock.write(Buffer.concat([head, mask, data]));
        return new Promise((res, rej) => pending.set(id, { resolve: res, reject: rej }));
      },
      close() { sock.destroy(); },
    };
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!open) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!buf.toString('latin1', 0, end).startsWith('HTTP/1.1 101')) return reject(new Error('no WebSocket upgrade'));
        buf = buf.subarray(end + 4);
        open = true;
        resolve(client);
      }
      for (;;) {
        if (buf.length < 2) return;
        let len = buf[1] & 0x7f, off = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
        if (buf.length < off + len) return;
        const fin = (buf[0] & 0x80) !== 0, op = buf[0] & 0x0f;
        parts.push(buf.subarray(off, off + len));
        buf = buf.subarray(off + len);
        if (!fin || (op !== 1 && op !== 0)) { if (op !== 0 && op !== 1) parts = []; continue; }
        const msg = JSON.parse(Buffer.concat(parts).toString('utf8'));
        parts = [];
        const p = msg.id && pending.get(msg.id);
        if (!p) continue;
        pending.delete(msg.id);
        if (msg.error) p.reject(new Error(JSON.stringify(msg.error)));
        else p.resolve(msg.result);
      }
    });
  });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-status-'));
const shots = process.env.DEEPINFER_TEST_OUTPUT || dir;
const [ports, http] = [[await freePort(), await freePort(), await freePort()], await freePort()];
const manifest = path.join(dir, 'cluster.toml');
// A killed node is restarted only after 20 s here, so the page has time to show it dead.
fs.writeFileSync(manifest, clusterManifest(path.join(dir, 'kv'), [
  manifestNode('n0', ports[0], ['controller', 'entrypoint', 'kvstore'], `http = "127.0.0.1:${http}"\n`),
  manifestNode('p0', ports[1], ['prefill'], 'ranks = 1\n'),
  manifestNode('d0', ports[2], ['decode'], 'ranks = 1\n'),
]).replace('restart_delay_ms = 200', 'restart_delay_ms = 20000'));
const logPath = path.join(dir, 'cluster.log');
const cluster = spawn(exe, ['--manifest', manifest], { stdio: ['ignore', fs.openSync(logPath, 'w'), fs.openSync(logPath, 'a')] });
const base = `http://127.0.0.1:${http}`;
const procs = [cluster];
let page;

const text = (sel) => page.send('Runtime.evaluate', { expression: `document.querySelector(${JSON.stringify(sel)}).innerText`,
                                                      returnByValue: true }).then((r) => r.result.value ?? '');
/// The page's node table as {name: state}.
async function nodeStates() {
  const rows = (await text('#nodes tbody')).split('\n').filter(Boolean).map((l) => l.split('\t'));
  return Object.fromEntries(rows.map((r) => [r[0], r[2]]));
}
async function screenshot(name) {
  const { data } = await page.send('Page.captureScreenshot', { format: 'png' });
  const file = path.join(shots, `status-page-${name}.png`);
  fs.writeFileSync(file, Buffer.from(data, 'base64'));
  console.log(`     screenshot: ${file}`);
}

try {
  await waitFor('the cluster serving a request', async () => {
    try {
      const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'deepseek-v4.1-flash', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }) });
      return r.status === 200;
    } catch { return false; }
  }, { deadlineMs: 120000, everyMs: 200 });

  const profile = path.join(dir, 'chromium-profile');
  const browser = spawn(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`,
    '--remote-debugging-port=0', '--window-size=1280,1100', base + '/'], { stdio: ['ignore', 'ignore', 'pipe'] });
  procs.push(browser);
  let stderr = '';
  browser.stderr.on('data', (d) => { stderr += d; });
  let devtoolsPort = 0;
  await waitFor('Chromium\'s DevTools endpoint', async () => {
    const m = stderr.match(/DevTools listening on ws:\/\/127\.0\.0\.1:(\d+)\//);
    if (m) devtoolsPort = Number(m[1]);
    return devtoolsPort > 0;
  }, { deadlineMs: 60000, everyMs: 100, explain: () => stderr.slice(-2000) });
  let target;
  await waitFor('the page target', async () => {
    const list = await (await fetch(`http://127.0.0.1:${devtoolsPort}/json/list`)).json();
    target = list.find((t) => t.type === 'page' && t.url.startsWith(base));
    return !!target;
  }, { deadlineMs: 30000, everyMs: 100 });
  page = await devtools(target.webSocketDebuggerUrl);

  await check('the page loads and shows every node alive, every instance running, from the server itself', async () => {
    await waitFor('three alive nodes on the page', async () => {
      const s = await nodeStates();
      return ['n0', 'p0', 'd0'].every((n) => s[n] === 'alive');
    }, { deadlineMs: 30000, everyMs: 200, explain: async () => text('body') });
    const inst = await text('#instances tbody');
    for (const i of ['p0/prefill', 'd0/decode'])
      assert.match(inst, new RegExp(`${i}\\t\\w+\\trunning\\t1 / 1`), inst);
    assert.match(await text('#meta'), /node n0 · controller connected/);
    assert.match(await text('#kv'), /prefix-cache hit ratio/);
    const requests = await page.send('Runtime.evaluate', {
      expression: 'JSON.stringify(performance.getEntriesByType("resource").map((e) => e.name))', returnByValue: true });
    for (const url of JSON.parse(requests.result.value))
      assert.ok(url.startsWith(base + '/'), `the page fetched ${url}: nothing but its own server`);
    await screenshot('before');
  });

  await check('the open page shows the decode node dead after its process is SIGKILLed, without a reload', async () => {
    const navs = (await page.send('Runtime.evaluate', { expression: 'performance.getEntriesByType("navigation").length',
                                                          returnByValue: true })).result.value;
    const pids = spawnSync('pgrep', ['-f', `${manifest} --node d0`]).stdout.toString().trim().split('\n').filter(Boolean);
    assert.equal(pids.length, 1, `one d0 process: ${pids}`);
    process.kill(Number(pids[0]), 'SIGKILL');
    const ms = await waitFor('d0 dead on the page', async () => (await nodeStates()).d0 === 'dead',
                             { deadlineMs: 30000, everyMs: 200, explain: async () => text('#nodes') });
    console.log(`     d0 shown dead ${ms} ms after the kill`);
    const s = await nodeStates();
    assert.equal(s.n0, 'alive');
    assert.equal(s.p0, 'alive');
    const after = (await page.send('Runtime.evaluate', { expression: 'performance.getEntriesByType("navigation").length',
                                                           returnByValue: true })).result.value;
    assert.equal(after, navs, 'the page was not reloaded');
    await screenshot('after');
  });
} catch (e) {
  await check('setup', () => { throw e; });
} finally {
  if (page) page.close();
}
// A passing run leaves nothing behind (the screenshots stay only where DEEPINFER_TEST_OUTPUT
// puts them); a failing one keeps the folder (log, screenshots) to look at.
await finish(procs, logPath, () => fs.rmSync(results.every(([, ok]) => ok) ? dir : path.join(dir, 'kv'),
                                             { recursive: true, force: true }));
