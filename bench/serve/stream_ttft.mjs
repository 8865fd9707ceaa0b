// bench/serve/stream_ttft.mjs: the serve benches' one way to time a streamed chat completion.
/// Times a streamed Chat Completions request (greedy, usage included): `ttft` is the milliseconds
/// to its first token (the second SSE event: the first is the role chunk), `total` to its end,
/// `usage` the final usage chunk's (null when none came); throws on a non-2xx answer.
export async function streamTimed(base, model, content, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0,
                           stream: true, stream_options: { include_usage: true } }) });
  const reader = r.body.getReader(); const dec = new TextDecoder();
  let text = ''; let first = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
    if (first === null && (text.match(/^data: /gm) || []).length >= 2) first = performance.now() - t0;
  }
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${text}`);
  let usage = null;
  for (const line of text.split('\n'))
    if (line.startsWith('data: {') && line.includes('"usage":{')) usage = JSON.parse(line.slice(6)).usage;
  return { ttft: first ?? performance.now() - t0, total: performance.now() - t0, usage };
}

/// Milliseconds to the first token of `streamTimed`'s request.
export async function streamTtft(base, model, content, maxTokens) {
  return (await streamTimed(base, model, content, maxTokens)).ttft;
}
