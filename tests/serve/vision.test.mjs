// Image inputs end to end (issue 21) with each official client: Chat `image_url`, Responses
// `input_image` and Messages `image` (base64 source) are answered; the same conversation with the
// same image again reports cached tokens past the image and gives the same greedy output; another
// image gives other output; a corrupt, oversized or unsupported image is a 400 in the API's own
// error shape, and the server keeps serving. http(s) URLs (Chat, Responses, Messages' url source)
// are fetched from a local origin in the test: the same answer and prefix-cache entry as the data
// URI, a redirect followed, a 404 / non-image / unreachable URL a 400 naming the field. The
// embedded default's vision instance encodes the images (the vision balancer routes them). The
// same picture as PNG, GIF and lossless WebP is one image: the same answer and cache entry. The
// PNGs and GIFs are made in the test (images.mjs), seeded; the WebP by Debian's cwebp.
// Usage: node vision.test.mjs /path/to/caf-launch
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { apiClients, check, serverUp, setupFailed, startServer, stopServer, verdict, postJson as post } from './harness.mjs';
import { dataUri, gif, palettedImage, png, pngOf } from './images.mjs';

const [OpenAI, Anthropic] = apiClients(['openai', '@anthropic-ai/sdk']);
const MODEL = 'deepseek-v4.1-flash';
const exe = process.argv[2];
const logPath = path.join(os.tmpdir(), `deepinfer-vision-test-${process.pid}.log`);

// 256 x 192 pixels: 8 x 6 cells of 32 px on the tiny model, 48 placeholders.
const imageA = png(256, 192, 1);
const imageB = png(256, 192, 2);
const corrupt = Buffer.concat([imageA.subarray(0, 40), Buffer.alloc(60, 7)]);
const oversized = png(1100, 1000, 3, true); // over the default max_pixels (1048576)
const bmp = Buffer.concat([Buffer.from('BM', 'latin1'), Buffer.alloc(60, 1)]);

// The image comes first, so its placeholders sit in the first 128-token block; the text after it
// makes the prompt long enough (> 262 tokens) for that block to be reusable, and short enough
// that the last positions still see the image through the encoder's windows.
const question = Array.from({ length: 120 }, (_, i) => `w${(i * 7919) % 1009}`).join(' ') + ' What is in the picture?';


// The image origin for the URL cases: a plain node:http server on loopback (the entrypoint
// fetches from loopback by default, [vision] fetch_private_addresses).
const origin = await (async () => {
  const files = { '/a.png': imageA, '/b.png': imageB, '/c.png': png(192, 192, 5) };
  const srv = http.createServer((req, res) => {
    if (req.url.startsWith('/moved/')) { res.writeHead(302, { location: '/' + req.url.slice(7) }); return res.end(); }
    if (req.url === '/page') { res.writeHead(200, { 'content-type': 'text/html' }); return res.end('<html></html>'); }
    const body = files[req.url];
    if (!body) { res.writeHead(404, { 'content-type': 'text/plain' }); return res.end('not found'); }
    res.writeHead(200, { 'content-type': 'image/png', 'content-length': body.length });
    res.end(body);
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const closed = http.createServer();
  await new Promise((r) => closed.listen(0, '127.0.0.1', r));
  const closedPort = closed.address().port;
  await new Promise((r) => closed.close(r));
  return { srv, base: `http://127.0.0.1:${srv.address().port}`, closedPort };
})();

let server = await startServer(exe, { logPath, kvPrefix: 'deepinfer-vision-kv-' });
try {
  await serverUp(server);
  const base = server.base;
  const openai = new OpenAI({ baseURL: base + '/v1', apiKey: 'none', maxRetries: 0, timeout: 120000 });
  const anthropic = new Anthropic({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 120000 });

  const chat = (img, extra = {}) => openai.chat.completions.create({
    model: MODEL, max_tokens: 16, temperature: 0, logprobs: true, ...extra,
    messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(img) } },
                                          { type: 'text', text: question }] }] });
  const responses = (img) => openai.responses.create({
    model: MODEL, max_output_tokens: 16, temperature: 0,
    input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUri(img) },
                                      { type: 'input_text', text: question }] }] });
  const messages = (img, type = 'image/png') => anthropic.messages.create({
    model: MODEL, max_tokens: 16, temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: type, data: img.toString('base64') } },
                                         { type: 'text', text: question }] }] });
  const firstLogprobs = (r) => JSON.stringify(r.choices[0].logprobs?.content?.map((t) => t.logprob) ?? []);

  let chatA;
  await check('chat image_url: answered; the same image again hits past the image with the same greedy output', async () => {
    const miss = await chat(imageA);
    chatA = miss;
    const hit = await chat(imageA);
    const cached = hit.usage.prompt_tokens_details?.cached_tokens ?? 0;
    console.log(`     prompt ${hit.usage.prompt_tokens} tokens, cached ${miss.usage.prompt_tokens_details?.cached_tokens ?? 0} then ${cached}`);
    assert.equal(miss.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, 'a fresh KV root misses');
    assert.equal(miss.usage.completion_tokens, 16);
    // The image's placeholders lie in the first block (a few tokens of template before them):
    // a hit of one block or more covers the image.
    assert.ok(cached >= 128, `the second send hits past the image: ${cached} cached`);
    assert.equal(hit.choices[0].message.content, miss.choices[0].message.content, 'same greedy output with the hit');
    assert.equal(firstLogprobs(hit), firstLogprobs(miss), 'same log-probabilities with the hit');
  });

  await check('chat: another image at the same place never reuses the first one\'s KV and changes the output', async () => {
    const other = await chat(imageB);
    assert.equal(other.usage.prompt_tokens, chatA.usage.prompt_tokens, 'same prompt length (same image size)');
    const cached = other.usage.prompt_tokens_details?.cached_tokens ?? 0;
    assert.equal(cached, 0, `the block holding image A is not image B's: ${cached} cached`);
    assert.notEqual(firstLogprobs(other), firstLogprobs(chatA), 'the image changes the greedy log-probabilities');
    console.log(`     greedy A: ${JSON.stringify(chatA.choices[0].message.content)}\n     greedy B: ${JSON.stringify(other.choices[0].message.content)}`);
    // A seeded sample (temperature 1) follows the whole distribution, which greedy decoding of a
    // random model barely shows: the same seed gives the same text for the same image only.
    const sampled = async (img) => (await chat(img, { temperature: 1, seed: 7, logprobs: false })).choices[0].message.content;
    const [a1, a2, b1] = [await sampled(imageA), await sampled(imageA), await sampled(imageB)];
    console.log(`     seeded A: ${JSON.stringify(a1)}\n     seeded B: ${JSON.stringify(b1)}`);
    assert.equal(a2, a1, 'the same image and seed: the same sample');
    assert.notEqual(b1, a1, 'another image: another sample');
  });

  await check('responses input_image: answered; again with the same image: cached past it, same output', async () => {
    const miss = await responses(imageB);
    const hit = await responses(imageB);
    const cached = hit.usage.input_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached >= 128, `cached ${cached}`);
    assert.equal(hit.output_text, miss.output_text);
    assert.equal(miss.usage.output_tokens, 16);
  });

  await check('messages image (base64 source): answered; again: cache_read past the image, same output; another image differs', async () => {
    const imageC = png(192, 192, 5), imageD = png(192, 192, 6);
    const miss = await messages(imageC);
    const hit = await messages(imageC);
    const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    assert.equal(miss.usage.cache_read_input_tokens ?? 0, 0);
    assert.ok((hit.usage.cache_read_input_tokens ?? 0) >= 128, `cache_read ${hit.usage.cache_read_input_tokens}`);
    assert.equal(text(hit), text(miss));
    const other = await messages(imageD);
    assert.equal(other.usage.cache_read_input_tokens ?? 0, 0, 'image D does not reuse image C\'s block');
    assert.notEqual(text(other), text(miss), 'another image, other text');
  });

  await check('http(s) image URLs: fetched by the entrypoint, the same answer and cache entry as the data URI; a 404 URL is a 400', async () => {
    const url = (p) => `${origin.base}${p}`;
    // Chat: the URL of image A answers as its data URI did, from the same prefix-cache entry
    // (the key covers the pixels, not how they came).
    const byUrl = await openai.chat.completions.create({
      model: MODEL, max_tokens: 16, temperature: 0, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: url('/a.png') } },
                                            { type: 'text', text: question }] }] });
    const cached = byUrl.usage.prompt_tokens_details?.cached_tokens ?? 0;
    console.log(`     by URL: prompt ${byUrl.usage.prompt_tokens} tokens, cached ${cached}`);
    assert.equal(byUrl.usage.prompt_tokens, chatA.usage.prompt_tokens);
    assert.ok(cached >= 128, `the URL hits the data URI's entry past the image: ${cached} cached`);
    assert.equal(byUrl.choices[0].message.content, chatA.choices[0].message.content, 'same greedy output as the data URI');
    assert.equal(firstLogprobs(byUrl), firstLogprobs(chatA));
    // A redirect is followed; Responses takes the URL too.
    const viaRedirect = await openai.responses.create({
      model: MODEL, max_output_tokens: 16, temperature: 0,
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: url('/moved/b.png') },
                                        { type: 'input_text', text: question }] }] });
    const inline = await responses(imageB);
    assert.equal(viaRedirect.output_text, inline.output_text);
    assert.ok((viaRedirect.usage.input_tokens_details?.cached_tokens ?? 0) >= 128);
    // Messages: Anthropic's url source.
    const imageC = png(192, 192, 5);
    const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const byAnthropicUrl = await anthropic.messages.create({
      model: MODEL, max_tokens: 16, temperature: 0,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: url('/c.png') } },
                                           { type: 'text', text: question }] }] });
    assert.equal(text(byAnthropicUrl), text(await messages(imageC)));
    assert.ok((byAnthropicUrl.usage.cache_read_input_tokens ?? 0) >= 128);
    // count_tokens fetches the URL too (an image's placeholders depend on its size): the same
    // count as the base64 image and as the request's own usage.
    const counted = async (source) => (await anthropic.messages.countTokens({
      model: MODEL, messages: [{ role: 'user', content: [{ type: 'image', source }, { type: 'text', text: question }] }] })).input_tokens;
    const countByUrl = await counted({ type: 'url', url: url('/c.png') });
    assert.equal(countByUrl, await counted({ type: 'base64', media_type: 'image/png', data: imageC.toString('base64') }));
    assert.equal(countByUrl, byAnthropicUrl.usage.input_tokens + (byAnthropicUrl.usage.cache_read_input_tokens ?? 0));
    console.log(`     count_tokens by URL: ${countByUrl}`);
    // Errors: a 400 in each API's shape naming the field, the origin's answer in the message.
    await assert.rejects(openai.chat.completions.create({
      model: MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: url('/missing.png') } }] }] }),
    (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, `${e}`);
      assert.equal(e.error?.type, 'invalid_request_error');
      assert.equal(e.error?.param, 'messages[0].content[1].image_url.url');
      assert.match(e.error?.message ?? '', /HTTP 404/);
      return true;
    });
    await assert.rejects(anthropic.messages.create({
      model: MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: url('/page') } }] }] }),
    (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, `${e}`);
      assert.equal(e.error?.error?.type, 'invalid_request_error');
      assert.match(e.error?.error?.message ?? '', /not an image/);
      return true;
    });
    const refused = await post(base, '/v1/chat/completions', { model: MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `http://127.0.0.1:${origin.closedPort}/a.png` } }] }] });
    assert.equal(refused.status, 400);
    assert.match(refused.json.error.message, /cannot fetch/);
    console.log(`     unreachable: ${refused.json.error.message}`);
    // Every fetch counted by result, with its bytes.
    const m = await (await fetch(base + '/metrics')).text();
    const sample = (re) => Number(m.match(re)?.[1] ?? 0);
    assert.ok(sample(/^deepinfer_image_fetches_total\{result="ok"\} (\S+)$/m) >= 4, 'ok fetches counted');
    assert.ok(sample(/^deepinfer_image_fetches_total\{result="http_status"\} (\S+)$/m) >= 1, 'the 404 counted');
    assert.ok(sample(/^deepinfer_image_fetches_total\{result="not_image"\} (\S+)$/m) >= 1, 'the HTML page counted');
    assert.ok(sample(/^deepinfer_image_fetches_total\{result="unreachable"\} (\S+)$/m) >= 1, 'the closed port counted');
    assert.ok(sample(/^deepinfer_image_fetch_bytes_total (\S+)$/m) > 0, 'fetched bytes counted');
  });

  await check('the same picture as PNG, GIF and lossless WebP: one image (the same answer, each hits the first one\'s cache entry)', async () => {
    const picture = palettedImage(224, 160, 11);
    const asPng = pngOf(224, 160, picture.rgb), asGif = gif(224, 160, picture);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-vision-webp-'));
    fs.writeFileSync(path.join(dir, 'p.png'), asPng);
    const made = spawnSync('cwebp', ['-quiet', '-lossless', path.join(dir, 'p.png'), '-o', path.join(dir, 'p.webp')]);
    assert.equal(made.status, 0, `cwebp (Debian package webp, scripts/packages/tests.txt) made the WebP: ${made.error ?? made.stderr}`);
    const asWebp = fs.readFileSync(path.join(dir, 'p.webp'));
    fs.rmSync(dir, { recursive: true, force: true });
    const first = await chat(asPng);
    assert.equal(first.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, 'a new picture misses');
    for (const [type, bytes] of [['image/gif', asGif], ['image/webp', asWebp]]) {
      const r = await openai.chat.completions.create({
        model: MODEL, max_tokens: 16, temperature: 0, logprobs: true,
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(bytes, type) } },
                                              { type: 'text', text: question }] }] });
      const cached = r.usage.prompt_tokens_details?.cached_tokens ?? 0;
      console.log(`     ${type} (${bytes.length} bytes): cached ${cached} of ${r.usage.prompt_tokens}`);
      assert.equal(r.usage.prompt_tokens, first.usage.prompt_tokens, `${type}: same prompt length`);
      assert.ok(cached >= 128, `${type}: the PNG's cache entry covers it (the key is the pixels): ${cached} cached`);
      assert.equal(r.choices[0].message.content, first.choices[0].message.content, `${type}: same greedy output`);
      assert.equal(firstLogprobs(r), firstLogprobs(first), `${type}: same log-probabilities`);
    }
    // Anthropic's media types for them, answered the same.
    const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const [viaGif, viaWebp] = [await messages(asGif, 'image/gif'), await messages(asWebp, 'image/webp')];
    assert.equal(text(viaWebp), text(viaGif));
    assert.ok((viaWebp.usage.cache_read_input_tokens ?? 0) >= 128, `cache_read ${viaWebp.usage.cache_read_input_tokens}`);
  });

  await check('corrupt, oversized and unsupported images: 400 in each API\'s error shape (official clients)', async () => {
    for (const [what, img] of [['corrupt', corrupt], ['oversized', oversized]]) {
      await assert.rejects(chat(img), (e) => {
        assert.ok(e instanceof OpenAI.BadRequestError, `${what} chat: ${e}`);
        assert.equal(e.status, 400);
        assert.equal(e.error?.type, 'invalid_request_error');
        assert.match(e.error?.message ?? e.message, /Image 1/);
        return true;
      });
      await assert.rejects(responses(img), (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
      await assert.rejects(messages(img), (e) => {
        assert.ok(e instanceof Anthropic.BadRequestError, `${what} messages: ${e}`);
        assert.equal(e.status, 400);
        assert.equal(e.error?.type, 'error');
        assert.equal(e.error?.error?.type, 'invalid_request_error');
        return true;
      });
    }
    await assert.rejects(messages(bmp, 'image/png'), (e) => e instanceof Anthropic.BadRequestError &&
                         /send a PNG, JPEG, GIF or WebP image/.test(e.error?.error?.message ?? ''));
    // An image under one cell (32 px) is stretched to one, not refused: an icon gets an answer.
    const icon = (seed) => post(base, '/v1/chat/completions', { model: MODEL, max_tokens: 4, temperature: 0,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(png(8, 8, seed)) } },
                                           { type: 'text', text: 'what is this icon?' }] }] });
    const [icon1, icon2] = [await icon(1), await icon(2)];
    assert.equal(icon1.status, 200, JSON.stringify(icon1.json));
    assert.equal(icon2.status, 200, JSON.stringify(icon2.json));
    assert.equal(icon1.json.usage.prompt_tokens, icon2.json.usage.prompt_tokens);
    // Stretched past the pixel limit (8 x 40000 becomes 32 x 40000): refused, saying why.
    const thin = await post(base, '/v1/chat/completions', { model: MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(png(8, 40000, 1, true)) } }] }] });
    assert.equal(thin.status, 400, JSON.stringify(thin.json));
    assert.match(thin.json.error.message, /less elongated/);
    const tooMany = await post(base, '/v1/chat/completions', { model: MODEL, max_tokens: 4,
      messages: [{ role: 'user', content: Array.from({ length: 9 }, () => ({ type: 'image_url', image_url: { url: dataUri(imageA) } })) }] });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.json.error.message, /more than 8 images/);
  });

  await check('a large body is answered while normal-priority work keeps every core busy (the background parser starves; the request actor parses it)', async () => {
    // 4.4 MB of JSON (a random 1100 x 1000 PNG, over max_pixels): parsed on the SCHED_IDLE
    // thread, which gets next to nothing while two busy loops hold both cores, so after 2 s the
    // request actor parses it instead (before that fallback: ~10 s here).
    const body = JSON.stringify({ model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUri(png(1100, 1000, 4)) } }, { type: 'text', text: 'x' }] }] });
    const loops = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
    try {
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const json = await r.json();
      const ms = Date.now() - t0;
      console.log(`     answered in ${ms} ms beside two busy loops`);
      assert.equal(r.status, 400, JSON.stringify(json));
      assert.match(json.error.message, /pixels/);
      assert.ok(ms < 6000, `answered within 6 s: ${ms} ms`);
    } finally {
      for (const l of loops) l.kill('SIGKILL');
    }
  });

  await check('the server keeps serving after the refusals (the same image answers as before)', async () => {
    const again = await chat(imageA);
    assert.equal(again.choices[0].message.content, chatA.choices[0].message.content);
    const h = await fetch(base + '/health');
    assert.ok(h.ok);
  });

  await check('a conversation sent again: an image inside the prefix-cache hit is encoded nowhere, the output is the same', async () => {
    // The image first, then ~1,200 tokens of text: the hit (blocks up to L - 134) ends far more
    // than a window past the image's placeholders.
    const long = Array.from({ length: 600 }, (_, i) => `v${(i * 104729) % 2003}`).join(' ') + ' What is in the picture?';
    const ask = (img) => openai.chat.completions.create({
      model: MODEL, max_tokens: 8, temperature: 0, logprobs: true,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(img) } }, { type: 'text', text: long }] }] });
    const count = async (name) => {
      const text = await (await fetch(base + '/metrics')).text();
      return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
    };
    const imageE = png(256, 192, 11), imageF = png(256, 192, 12);
    const e0 = await count('deepinfer_vision_images_encoded_total');
    const first = await ask(imageE);
    const e1 = await count('deepinfer_vision_images_encoded_total');
    assert.equal(e1 - e0, 1, 'the first send encodes its image once');
    const skipped0 = await count('deepinfer_vision_images_cached_total');
    const again = await ask(imageE);
    const cached = again.usage.prompt_tokens_details?.cached_tokens ?? 0;
    console.log(`     prompt ${again.usage.prompt_tokens} tokens, cached ${cached}`);
    assert.ok(cached >= again.usage.prompt_tokens - 134 - 127, `the second send hits all its full blocks: ${cached} cached`);
    assert.equal(await count('deepinfer_vision_images_encoded_total'), e1, 'the second send encodes nothing (vision rank or prefill rank)');
    assert.equal(await count('deepinfer_vision_images_cached_total') - skipped0, 1, 'counted as held by the hit');
    assert.equal(again.choices[0].message.content, first.choices[0].message.content, 'same greedy output');
    assert.equal(firstLogprobs(again), firstLogprobs(first), 'same log-probabilities');
    // Another image in the same place is no hit: it is encoded.
    const other = await ask(imageF);
    assert.equal(other.usage.prompt_tokens_details?.cached_tokens ?? 0, 0, 'another image: no hit');
    assert.equal(await count('deepinfer_vision_images_encoded_total'), e1 + 1, 'another image is encoded');
    // The block files gone after the entrypoint's CHECK (a store wiped under it): the entrypoint
    // still finds the hit in its index and sends no image, the prefill rank's hit falls through,
    // and the rank encodes the image itself: the same output.
    const wipe = (dir) => { for (const f of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, f.name);
      if (f.isDirectory()) wipe(p); else fs.rmSync(p, { force: true });
    } };
    wipe(server.kvRoot);
    const prefillEncoded = async () => {
      const text = await (await fetch(base + '/metrics')).text();
      return [...text.matchAll(/^deepinfer_vision_images_encoded_total\{[^}]*instance="local\/prefill"[^}]*\} (\S+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    };
    const p0 = await prefillEncoded();
    const lost = await ask(imageE);
    console.log(`     blocks wiped: cached ${lost.usage.prompt_tokens_details?.cached_tokens ?? 0}, prefill-rank encodes ${await prefillEncoded() - p0}`);
    assert.equal(lost.choices[0].message.content, first.choices[0].message.content, 'same greedy output without the blocks');
    assert.equal(firstLogprobs(lost), firstLogprobs(first), 'same log-probabilities without the blocks');
    assert.equal(await count('deepinfer_vision_images_encoded_total'), e1 + 2, 'the image is encoded again, once');
  });

  await check('metrics count the images encoded', async () => {
    const text = await (await fetch(base + '/metrics')).text();
    const lines = [...text.matchAll(/^deepinfer_vision_images_encoded_total(?:\{[^}]*\})? (\S+)$/gm)];
    assert.ok(lines.length > 0, 'deepinfer_vision_images_encoded_total is exported');
    // Chat A x3, B; Responses B x2; Messages C x2, D: every accepted image was encoded.
    const encoded = lines.reduce((a, m) => a + Number(m[1]), 0);
    assert.ok(encoded >= 9, `images encoded: ${encoded}`);
    // The embedded default's vision instance encoded them (the vision balancer routed them there),
    // not the prefill ranks' fallback.
    const vision = lines.filter((m) => /instance="local\/vision"/.test(m[0])).reduce((a, m) => a + Number(m[1]), 0);
    assert.ok(vision >= 9, `images encoded on the vision rank: ${vision} of ${encoded}`);
    const queued = text.match(/^deepinfer_vision_queue_seconds_count(?:\{\})? (\S+)$/m);
    assert.ok(queued && Number(queued[1]) >= 9, `encoder queue time observed for every routed image: ${queued?.[1]}`);
    // Nothing is in flight once every answer is back.
    const inFlight = [...text.matchAll(/^deepinfer_vision_patches_in_flight\{[^}]*\} (\S+)$/gm)];
    assert.ok(inFlight.length > 0, 'patches in flight per vision rank are exported');
    for (const m of inFlight) assert.equal(Number(m[1]), 0, m[0]);
  });
} catch (e) {
  setupFailed(e);
} finally {
  await stopServer(server);
  origin.srv.close();
}
verdict(logPath);
