// bench/serve/stream_ttft.mjs: the serve benches' one way to time a streamed chat completion.
/// Milliseconds from sending a streamed Chat Completions request to its first token (the second
/// SSE event: the first is the role chunk); throws on a non-2xx answer.
export async function streamTtft(base, model, content, maxTokens) {
  const t0 = performance.now();
  const r = await fetch(base + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }], max_tokens: maxTokens, temperature: 0, stream: true }) });
  const reader = r.body.getReader(); const dec = new TextDecoder();
  let text = ''; let first = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
    if (first === null && (text.match(/^data: /gm) || []).length >= 2) first = performance.now() - t0;
  }
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${text}`);
  return first ?? performance.now() - t0;
}
