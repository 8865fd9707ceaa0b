// Hostile clients against the embedded default (issue 14): deep and wide JSON on every route and
// in every nested field, 8 MiB bodies, a 7 MB prompt, a connection flood to the cap, stalled
// headers and bodies, wrong Content-Type / Content-Encoding / Host, CORS, HTTP-level errors in
// each API's shape, the deadline path on all three APIs (the official SDKs see an error, not a
// normal end), 429 / 529 under overload, a request refused after its queue timeout without being
// computed, and a cache probe across tenants. The server must stay up through all of it and
// /health (probed from a worker thread all along) must stay under 10 ms p99.
// Two servers: `main` (small connection cap, short timeouts, tight admission) and `keyed` (API
// keys, a 2 s total deadline). Usage: node hostile.test.mjs /path/to/caf-launch
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, finish, results, serverUp, startServer, waitFor } from './harness.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';
const ROUTES = ['/v1/chat/completions', '/v1/responses', '/v1/messages'];
const KEYS = ['key-alpha-0123456789', 'key-beta-9876543210'];
const MAX_CONNECTIONS = 48;

const exe = process.argv[2];
const t00 = Date.now();

// -- servers -----------------------------------------------------------------------------------
const servers = [];
async function start(name, flags) {
  const s = await startServer(exe, { flags, name, kvPrefix: `deepinfer-hostile-${name}-kv-`,
                                     logPath: path.join(os.tmpdir(), `deepinfer-hostile-${name}-${process.pid}.log`) });
  servers.push(s);
  return s;
}
async function up(s) {
  const ms = await serverUp(s);
  console.log(`${s.name} up in ${ms} ms on ${s.base}`);
}

// -- raw HTTP: one request on a fresh socket, the response parsed just enough -------------------
function raw(port, bytes, { timeout = 15000 } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => { sock.destroy(); reject(new Error('raw request timed out')); }, timeout);
    sock.on('data', (d) => { data = Buffer.concat([data, d]); });
    sock.on('error', () => {}); // a reset after the answer is fine
    sock.on('close', () => {
      clearTimeout(timer);
      const text = data.toString('latin1');
      const head = text.slice(0, text.indexOf('\r\n\r\n'));
      const status = Number(head.split(' ')[1]);
      const headers = Object.fromEntries(head.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status, headers, body: data.subarray(Buffer.byteLength(head, 'latin1') + 4).toString('utf8') });
    });
    // Never half-closed: a client that shuts its side down while waiting counts as gone.
    if (typeof bytes === 'function') bytes(sock); else sock.write(bytes);
  });
}
function request(method, route, body, headers = {}) {
  const h = { Host: '127.0.0.1', Connection: 'close', ...headers };
  if (body !== undefined) h['Content-Length'] = Buffer.byteLength(body);
  return `${method} ${route} HTTP/1.1\r\n${Object.entries(h).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body ?? ''}`;
}
async function post(s, route, body, headers = { 'content-type': 'application/json' }) {
  const r = await fetch(s.base + route, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, headers: r.headers, text: await r.text() };
}
/// The API's error shape for a route: Anthropic's on /v1/messages, OpenAI's elsewhere.
function errorOf(route, text) {
  const j = JSON.parse(text);
  if (route.startsWith('/v1/messages')) {
    assert.equal(j.type, 'error', `Anthropic shape on ${route}: ${text}`);
    assert.ok(j.error.type && j.error.message, text);
    return j.error;
  }
  assert.ok(j.error && typeof j.error.message === 'string' && 'param' in j.error && 'code' in j.error, `OpenAI shape on ${route}: ${text}`);
  return j.error;
}
/// A minimal valid body for a route, plus `extra` fields.
function minimal(route, extra = {}, content = 'Hi') {
  if (route === '/v1/responses') return { model: MODEL, input: content, max_output_tokens: 2, ...extra };
  if (route === '/v1/messages') return { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content }], ...extra };
  return { model: MODEL, max_tokens: 2, messages: [{ role: 'user', content }], ...extra };
}
const deep = (n, inner = '0') => '['.repeat(n) + inner + ']'.repeat(n);
const metric = async (s, name) => (await (await fetch(s.base + '/metrics')).text()).split('\n')
  .filter((l) => l.startsWith(name + '{') || l.startsWith(name + ' ')).reduce((a, l) => a + Number(l.split(' ').pop()), 0);

// -- /health prober: a process of its own, so neither the test's work nor its garbage collector
// delays it; it probes every 20 ms until told to stop, then reports the latencies. --------------
const PROBER = `
  const http = require('node:http');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const lat = []; let failures = 0; let stop = false;
  process.stdin.on('data', () => { stop = true; });
  // A keep-alive socket the server closed (idle eviction at the cap) fails once: the retry on a
  // fresh socket is the probe; a probe fails only when that fails too.
  (function probe(retry = false) {
    if (stop) { process.stdout.write(JSON.stringify({ lat, failures })); process.exit(0); }
    const t0 = process.hrtime.bigint();
    const req = http.get({ host: '127.0.0.1', port: Number(process.argv[1]), path: '/health',
                           agent: retry ? undefined : agent, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        lat.push(ms);
        if (ms > 5 && process.env.HOSTILE_DEBUG) process.stderr.write('slow probe ' + ms.toFixed(1) + ' ms at ' + (Date.now() % 100000) + '\\n');
        setTimeout(probe, 20);
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => { if (retry) { failures++; setTimeout(probe, 20); } else probe(true); });
  })();`;
function startProber(port) {
  const child = spawn(process.execPath, ['-e', PROBER, String(port)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  const done = new Promise((resolve) => child.on('exit', () => resolve(out)));
  return async () => { child.stdin.end('stop\n'); return JSON.parse(await done); };
}

let stopProber = null;
try {
  const main = await start('main', ['--max-connections', String(MAX_CONNECTIONS), '--header-timeout-ms', '1000',
    '--body-timeout-ms', '1000', '--admission-decode-sequences', '1', '--admission-max-waiting', '2',
    '--admission-queue-timeout-ms', '1500']);
  const keyed = await start('keyed', ['--api-key', KEYS[0], '--api-key', KEYS[1], '--request-deadline-ms', '2000']);
  await Promise.all([up(main), up(keyed)]);
  stopProber = startProber(main.port);
  const openai = new OpenAI({ baseURL: main.base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 30000 });
  const anthropic = new Anthropic({ baseURL: main.base, apiKey: 'none', maxRetries: 0, timeout: 30000 });

  await check('70,000-level JSON on every route: 400 in the API shape, server up', async () => {
    for (const route of ROUTES) {
      const r = await post(main, route, `{"x":${deep(70000)},"model":"${MODEL}"}`);
      assert.equal(r.status, 400, route);
      assert.match(errorOf(route, r.text).message, /too deeply nested/, route);
    }
  });
  await check('deep values inside every nested field are refused (400), not crashed on', async () => {
    const d = JSON.parse(`{"v":${deep(80, '{}')}}`).v; // parseable here, 80 levels + its place
    const cases = [
      ['/v1/chat/completions', { metadata: { a: d } }],
      ['/v1/chat/completions', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { p: d } } } }] }],
      ['/v1/chat/completions', { response_format: { type: 'json_schema', json_schema: { name: 's', schema: { p: d } } } }],
      ['/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: JSON.stringify({ a: d }) } }] }] }],
      ['/v1/responses', { metadata: { a: d } }],
      ['/v1/responses', { text: { format: { type: 'json_schema', name: 's', schema: { p: d } } } }],
      ['/v1/responses', { input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: JSON.stringify({ a: d }) }] }],
      ['/v1/messages', { tools: [{ name: 'f', input_schema: { type: 'object', properties: { p: d } } }] }],
      ['/v1/messages', { metadata: { user_id: 'u', a: d } }],
      ['/v1/messages', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: { a: d } }] }] }],
    ];
    for (const [route, extra] of cases) {
      const r = await post(main, route, minimal(route, extra));
      assert.equal(r.status, 400, `${route} ${JSON.stringify(extra).slice(0, 60)}: ${r.text}`);
      errorOf(route, r.text);
    }
  });
  await check('160,000-key objects on every route parse in linear time', async () => {
    const junk = '{' + Array.from({ length: 160000 }, (_, i) => `"k${i}":0`).join(',') + '}';
    for (const route of ROUTES) {
      const body = JSON.stringify(minimal(route)).slice(0, -1) + `,"junk":${junk}}`;
      const t0 = Date.now();
      const r = await post(main, route, body);
      assert.equal(r.status, 200, `${route}: ${r.text.slice(0, 200)}`);
      console.log(`     ${route}: ${(body.length / 1e6).toFixed(1)} MB, 160k keys, answered in ${Date.now() - t0} ms`);
      assert.ok(Date.now() - t0 < 10000, 'was 54 s before');
    }
  });
  await check('8 MiB bodies: at the limit answered, over it 413 in the API shape', async () => {
    for (const route of ROUTES) {
      const head = JSON.stringify(minimal(route)).slice(0, -1) + ',"junk":"';
      const body = head + 'a'.repeat((8 << 20) - head.length - 2) + '"}';
      const t0 = Date.now();
      const r = await post(main, route, body);
      assert.equal(r.status, 200, `${route}: ${r.text.slice(0, 200)}`);
      console.log(`     ${route}: 8 MiB answered in ${Date.now() - t0} ms`);
      const over = await post(main, route, body + ' '.repeat(64));
      assert.equal(over.status, 413, route);
      errorOf(route, over.text);
    }
  });
  await check('a 7 MB one-word prompt is refused from its size, and says how far over', async () => {
    const word = 'a'.repeat(7 << 20);
    for (const route of ROUTES) {
      const t0 = Date.now();
      const r = await post(main, route, minimal(route, {}, word));
      assert.equal(r.status, 400, route);
      const e = errorOf(route, r.text);
      assert.match(e.message, /context length is 40960 tokens.*at least \d+ tokens.*over the limit/, e.message);
      console.log(`     ${route}: 7 MB prompt refused in ${Date.now() - t0} ms`);
    }
    // Four at once do not hold up a small request.
    const t0 = Date.now();
    const big = Array.from({ length: 4 }, () => post(main, '/v1/chat/completions', minimal('/v1/chat/completions', {}, word)));
    const small = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    const smallMs = Date.now() - t0;
    for (const r of await Promise.all(big)) assert.equal(r.status, 400);
    assert.ok(small.choices.length === 1);
    console.log(`     small request beside four 7 MB prompts answered in ${smallMs} ms (was 15.9 s TTFT)`);
    assert.ok(smallMs < 8000, `${smallMs} ms`);
  });
  await check('wrong Content-Type or Content-Encoding: 415 in the API shape', async () => {
    for (const route of ROUTES) {
      const body = JSON.stringify(minimal(route));
      for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/x-www-form-urlencoded' }, {},
                             { 'content-type': 'application/json; charset=latin1' },
                             { 'content-type': 'application/json', 'content-encoding': 'gzip' }]) {
        const r = await raw(main.port, request('POST', route, body, headers));
        assert.equal(r.status, 415, `${route} ${JSON.stringify(headers)}`);
        errorOf(route, r.body);
      }
      const ok = await raw(main.port, request('POST', route, body, { 'Content-Type': 'application/json; charset=UTF-8' }));
      assert.equal(ok.status, 200, route);
    }
  });
  await check('a Host that is not this server is refused (DNS rebinding); loopback names pass', async () => {
    const body = JSON.stringify(minimal('/v1/chat/completions'));
    const evil = await raw(main.port, request('POST', '/v1/chat/completions', body, { Host: 'evil.example:' + main.port, 'Content-Type': 'application/json' }));
    assert.equal(evil.status, 403);
    assert.match(errorOf('/v1/chat/completions', evil.body).message, /allowed_hosts/);
    const m = await raw(main.port, request('GET', '/v1/messages', undefined, { Host: 'attacker.test' }));
    assert.equal(m.status, 403);
    errorOf('/v1/messages', m.body);
    for (const host of [`localhost:${main.port}`, `[::1]:${main.port}`])
      assert.equal((await raw(main.port, request('GET', '/health', undefined, { Host: host }))).status, 200, host);
  });
  await check('no CORS headers and no preflight answer (none configured)', async () => {
    const r = await raw(main.port, request('OPTIONS', '/v1/chat/completions', undefined, {
      Origin: 'https://evil.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type' }));
    assert.notEqual(r.status, 204);
    assert.equal(r.headers['access-control-allow-origin'], undefined);
    const g = await raw(main.port, request('GET', '/health', undefined, { Origin: 'https://evil.example' }));
    assert.equal(g.headers['access-control-allow-origin'], undefined);
  });
  await check('HTTP-level errors on /v1/messages in Anthropic\'s shape, elsewhere in OpenAI\'s', async () => {
    const r404 = await raw(main.port, request('GET', '/v1/messages/nope'));
    assert.equal(r404.status, 404);
    assert.equal(errorOf('/v1/messages', r404.body).type, 'not_found_error');
    const r405 = await raw(main.port, request('GET', '/v1/messages'));
    assert.equal(r405.status, 405);
    errorOf('/v1/messages', r405.body);
    const r413 = await raw(main.port, `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${(8 << 20) + 1}\r\n\r\n`);
    assert.equal(r413.status, 413);
    assert.equal(errorOf('/v1/messages', r413.body).type, 'request_too_large');
    const r431 = await raw(main.port, `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'x'.repeat(70000)}\r\n\r\n`);
    assert.equal(r431.status, 431);
    errorOf('/v1/messages', r431.body);
    const c404 = await raw(main.port, request('GET', '/v1/chat/nope'));
    assert.equal(c404.status, 404);
    assert.equal(errorOf('/v1/chat/nope', c404.body).code, 'not_found');
  });
  await check('stalled header or half body: 408 after the timeout, in the API shape', async () => {
    const stall = (route, bytes) => raw(main.port, (sock) => sock.write(bytes), { timeout: 10000 });
    const t0 = Date.now();
    const [a, b, c, d] = await Promise.all([
      stall('/v1/chat/completions', 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":'),
      stall('/v1/messages', 'POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":'),
      stall('/v1/responses', 'POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty'),
      stall('/v1/messages', 'POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty'),
    ]);
    for (const [r, route] of [[a, '/v1/chat/completions'], [b, '/v1/messages'], [c, '/v1/responses'], [d, '/v1/messages']]) {
      assert.equal(r.status, 408, route);
      errorOf(route, r.body);
    }
    assert.match(errorOf('/v1/chat/completions', a.body).message, /991 bytes still missing/);
    assert.ok(Date.now() - t0 >= 900 && Date.now() - t0 < 8000, `${Date.now() - t0} ms`);
  });
  await check(`a flood of ${MAX_CONNECTIONS * 4} idle connections: the cap holds, /health and requests still served`, async () => {
    const flood = [];
    let closedByServer = 0;
    for (let i = 0; i < MAX_CONNECTIONS * 4; ++i) {
      const s = net.connect(main.port, '127.0.0.1');
      s.on('error', () => {});
      s.on('close', () => { closedByServer++; });
      flood.push(s);
      await new Promise((r) => s.once('connect', r));
    }
    const t0 = Date.now();
    const h = await raw(main.port, request('GET', '/health'));
    assert.equal(h.status, 200);
    const healthMs = Date.now() - t0;
    const r = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
    assert.equal(r.choices.length, 1);
    const open = await metric(main, 'deepinfer_http_open_connections');
    console.log(`     /health in ${healthMs} ms; ${closedByServer} flood connections closed by the server; ${open} open`);
    assert.ok(open <= MAX_CONNECTIONS + 32, `open connections ${open}`);
    assert.ok(closedByServer >= MAX_CONNECTIONS * 3 - 8, `closed ${closedByServer}`);
    for (const s of flood) s.destroy();
  });
  await check('the deadline path on all three APIs: the SDK sees an error, never a normal end', async () => {
    const o = new OpenAI({ baseURL: keyed.base + '/v1', apiKey: KEYS[0], maxRetries: 0, timeout: 30000 });
    const a = new Anthropic({ baseURL: keyed.base, apiKey: KEYS[0], maxRetries: 0, timeout: 30000 });
    const long = { max_tokens: 30000 };
    const expectError = async (label, fn, status) => {
      const t0 = Date.now();
      let err = null;
      try { await fn(); } catch (e) { err = e; }
      assert.ok(err, `${label}: no error (a normal-looking end)`);
      assert.ok(err instanceof OpenAI.APIError || err instanceof Anthropic.APIError, `${label}: ${err}`);
      if (status) assert.equal(err.status, status, `${label}: ${err}`);
      assert.match(String(err.message ?? err), /deadline/, label);
      console.log(`     ${label}: ${err.constructor.name} after ${Date.now() - t0} ms`);
      return err;
    };
    const drain = async (s) => { for await (const _ of s) { /* until the error */ } };
    const ask = [{ role: 'user', content: 'Write a long story.' }];
    const errs = await Promise.all([
      expectError('chat stream', async () => drain(await o.chat.completions.create({ model: MODEL, messages: ask, ...long, stream: true }))),
      expectError('chat', () => o.chat.completions.create({ model: MODEL, messages: ask, ...long }), 504),
      expectError('responses stream', async () => drain(await o.responses.create({ model: MODEL, input: 'Write a long story.', max_output_tokens: 30000, stream: true }))),
      expectError('responses', () => o.responses.create({ model: MODEL, input: 'Write a long story.', max_output_tokens: 30000 }), 504),
      expectError('messages stream', async () => drain(await a.messages.create({ model: MODEL, messages: ask, ...long, stream: true }))),
      expectError('messages', () => a.messages.create({ model: MODEL, messages: ask, ...long }), 504),
    ]);
    assert.equal(errs.length, 6);
    // A non-streamed request cut short still returns what it generated, marked unfinished.
    const r = await post(keyed, '/v1/chat/completions', { model: MODEL, messages: ask, ...long },
                         { 'content-type': 'application/json', authorization: `Bearer ${KEYS[1]}` });
    assert.equal(r.status, 504);
    const body = JSON.parse(r.text);
    assert.equal(body.error.code, 'deadline_exceeded');
    assert.ok(body.partial.usage.completion_tokens > 0, 'partial answer');
    assert.equal(body.partial.choices[0].finish_reason, null);
  });
  await check('overload: 429 rate_limit_error (OpenAI routes) and 529 overloaded_error (Messages) with Retry-After', async () => {
    // Admission here: one sequence per decode rank, two may wait; a burst of 8 overflows it.
    // Chat and Messages go through the official SDKs (their rate-limit / overload errors), Responses raw.
    const header = (e, n) => (typeof e.headers?.get === 'function' ? e.headers.get(n) : e.headers?.[n]);
    const sdkCall = {
      '/v1/chat/completions': (i) => openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `Burst ${i}` }], max_tokens: 40 }),
      '/v1/messages': (i) => anthropic.messages.create({ model: MODEL, max_tokens: 40, messages: [{ role: 'user', content: `Burst ${i}` }] }),
    };
    for (const route of ROUTES) {
      const want = route === '/v1/messages' ? 529 : 429;
      const wantType = route === '/v1/messages' ? 'overloaded_error' : 'rate_limit_error';
      const out = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
        if (!sdkCall[route]) {
          const r = await post(main, route, minimal(route, { max_output_tokens: 40 }, `Burst ${i} on ${route}`));
          return r.status === 200 ? { status: 200 } : { status: r.status, type: errorOf(route, r.text).type, retry: r.headers.get('retry-after') };
        }
        try { await sdkCall[route](i); return { status: 200 }; } catch (e) {
          assert.ok(e instanceof OpenAI.APIError || e instanceof Anthropic.APIError, `${route}: ${e}`);
          return { status: e.status, type: e.type ?? e.error?.error?.type ?? e.error?.type, retry: header(e, 'retry-after') };
        }
      }));
      const statuses = out.map((r) => r.status).join(' ');
      assert.ok(out.every((r) => r.status === 200 || r.status === want), `${route}: ${statuses}`);
      const refused = out.filter((r) => r.status === want);
      assert.ok(refused.length >= 1 && out.some((r) => r.status === 200), `${route}: ${statuses}`);
      for (const r of refused) {
        assert.equal(r.type, wantType, `${route}: ${JSON.stringify(r)}`);
        assert.ok(Number(r.retry) >= 1, `${route}: Retry-After ${r.retry}`);
      }
      console.log(`     ${route}: ${statuses}`);
    }
  });
  await check('a request past its queue timeout is refused before any compute', async () => {
    // Two long streams hold both decode slots; a third waits 1.5 s, then gets 429.
    const holders = Array.from({ length: 2 }, (_, i) => { const ac = new AbortController();
      return { ac, p: fetch(main.base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
        body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: `hold ${i}` }], max_tokens: 30000, stream: true }) })
        .then(async (r) => { const rd = r.body.getReader(); await rd.read(); return rd; }) }; });
    const readers = await Promise.all(holders.map((h) => h.p));
    const words = Array.from({ length: 700 }, (_, i) => `q${(i * 7919) % 5003}`).join(' ');
    const before = await metric(main, 'deepinfer_admission_refused_total');
    const t0 = Date.now();
    const r = await post(main, '/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: words }], max_tokens: 2 });
    const waited = Date.now() - t0;
    assert.equal(r.status, 429);
    assert.match(errorOf('/v1/chat/completions', r.text).message, /queue timeout/);
    assert.ok(waited >= 1400, `refused after ${waited} ms`);
    assert.equal(await metric(main, 'deepinfer_admission_refused_total'), before + 1);
    for (const h of holders) h.ac.abort();
    for (const rd of readers) rd.cancel().catch(() => {});
    // It was never prefilled: the same prompt now misses the cache completely.
    const again = await openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: words }], max_tokens: 2 });
    assert.equal(again.usage.prompt_tokens_details?.cached_tokens ?? 0, 0);
  });
  await check('cache probe across tenants: another tenant\'s prefix reports 0 cached tokens (all three APIs)', async () => {
    const secretOf = (route) => `${route}: ` + Array.from({ length: 1400 }, (_, i) => `s${(i * 104729) % 7001}`).join(' ');
    const cached = {
      '/v1/chat/completions': (j) => j.usage.prompt_tokens_details?.cached_tokens ?? 0,
      '/v1/responses': (j) => j.usage.input_tokens_details?.cached_tokens ?? 0,
      '/v1/messages': (j) => j.usage.cache_read_input_tokens ?? 0,
    };
    const ask = async (s, route, salt, key) => {
      const secret = secretOf(route); // each route its own experiment
      const extra = salt ? { cache_salt: salt } : {};
      const body = route === '/v1/responses' ? { model: MODEL, instructions: secret, input: 'Go on.', max_output_tokens: 2, ...extra }
        : route === '/v1/messages' ? { model: MODEL, system: secret, max_tokens: 2, messages: [{ role: 'user', content: 'Go on.' }], ...extra }
        : { model: MODEL, max_tokens: 2, messages: [{ role: 'system', content: secret }, { role: 'user', content: 'Go on.' }], ...extra };
      const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
      const r = await post(s, route, body, headers);
      assert.equal(r.status, 200, r.text);
      return cached[route](JSON.parse(r.text));
    };
    for (const route of ROUTES) {
      // cache_salt on a server without keys: alice's second send hits, bob and the shared space miss.
      assert.equal(await ask(main, route, `alice-${route}`), 0);
      const hit = await ask(main, route, `alice-${route}`);
      assert.ok(hit >= 1024, `${route}: alice hits her own prefix (${hit})`);
      assert.equal(await ask(main, route, `bob-${route}`), 0, `${route}: bob learns nothing`);
      assert.equal(await ask(main, route, undefined), 0, `${route}: the shared namespace learns nothing`);
      // API keys: each key is its own namespace.
      assert.equal(await ask(keyed, route, undefined, KEYS[0]), 0);
      assert.ok(await ask(keyed, route, undefined, KEYS[0]) >= 1024, `${route}: a key hits its own prefix`);
      assert.equal(await ask(keyed, route, undefined, KEYS[1]), 0, `${route}: another key learns nothing`);
      console.log(`     ${route}: own tenant ${hit} cached; other tenants 0`);
    }
    const noKey = await post(keyed, '/v1/messages', minimal('/v1/messages'));
    assert.equal(noKey.status, 401);
    assert.equal(errorOf('/v1/messages', noKey.text).type, 'authentication_error');
  });
  await check('both servers still up; /health p99 under 10 ms all along', async () => {
    for (const s of servers) {
      assert.ok(!s.exited, `${s.name} exited`);
      assert.equal((await fetch(s.base + '/health')).status, 200);
    }
    const { lat, failures } = await stopProber();
    stopProber = null;
    lat.sort((x, y) => x - y);
    const p = (q) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))];
    console.log(`     /health: ${lat.length} probes, p50 ${p(0.5).toFixed(2)} ms, p99 ${p(0.99).toFixed(2)} ms, max ${lat[lat.length - 1].toFixed(1)} ms, ${failures} failures`);
    assert.equal(failures, 0);
    assert.ok(lat.length > 100, 'the prober ran');
    assert.ok(p(0.99) < 10, `p99 ${p(0.99).toFixed(2)} ms`);
  });
} catch (e) {
  results.push(['setup', false]);
  console.log(`FAIL setup: ${e.stack || e}`);
} finally {
  if (stopProber) await stopProber();
}
console.log(`ran in ${((Date.now() - t00) / 1000).toFixed(1)} s`);
if (results.some(([, ok]) => !ok) && servers[1])
  console.log(`keyed server's warn/error lines (the main server's follow):\n` + fs.readFileSync(servers[1].logPath, 'utf8')
    .split('\n').filter((l) => /warn|error|crit/.test(l)).slice(-15).join('\n'));
await finish(servers.map((s) => s.proc), servers[0]?.logPath, () => {
  const passed = results.every(([, ok]) => ok);
  for (const s of servers) {
    fs.rmSync(s.kvRoot, { recursive: true, force: true });
    if (passed) fs.rmSync(s.logPath, { force: true }); // kept when a check failed
  }
});
