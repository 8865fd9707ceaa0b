// node reassemble.js DIR
//
// Serves the SSE streams and JSON bodies our encoders wrote into DIR (chat.sse, chat.json,
// responses.sse, responses.json, messages.sse, messages.json) from a local HTTP server, lets the
// official clients (`openai`, `@anthropic-ai/sdk`; NODE_PATH must point at their node_modules)
// read them, streaming and not, and checks that each rebuilds DIR/expected.json: reasoning, text,
// and tool calls (names and parsed arguments). Exit status 0 when all six agree.
const http = require("http");
const fs = require("fs");
const path = require("path");
const assert = require("assert");
const OpenAI = require("openai").default ?? require("openai");
const AnthropicMod = require("@anthropic-ai/sdk");
const Anthropic = AnthropicMod.default ?? AnthropicMod;

const dir = process.argv[2];
const expected = JSON.parse(fs.readFileSync(path.join(dir, "expected.json"), "utf8"));
const routes = { "/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages" };

const server = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const name = routes[req.url.split("?")[0]];
    if (!name) { res.writeHead(404); res.end(); return; }
    const stream = JSON.parse(body).stream === true;
    const file = path.join(dir, name + (stream ? ".sse" : ".json"));
    res.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json" });
    res.end(fs.readFileSync(file));
  });
});

function check(label, got) {
  try {
    assert.deepStrictEqual(got, expected);
    console.log(`ok   ${label}`);
    return true;
  } catch (e) {
    console.log(`FAIL ${label}\n${e.message}`);
    return false;
  }
}

const parse = (s) => JSON.parse(s);

async function main() {
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  const openai = new OpenAI({ apiKey: "x", baseURL: base + "/v1", maxRetries: 0 });
  const anthropic = new Anthropic({ apiKey: "x", baseURL: base, maxRetries: 0 });
  const chatReq = { model: "m", messages: [{ role: "user", content: "hi" }] };
  const msgReq = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
  let ok = true;

  // Chat Completions, streaming: the SDK's accumulator for text and tool calls; reasoning_content is
  // a DeepSeek extension the SDK passes through per chunk, so it is concatenated from the chunks.
  {
    let reasoning = "";
    // openai 4.x (the last line that supports Node.js 18) has the helper under `beta`.
    const helper = openai.chat.completions.stream ? openai.chat.completions : openai.beta.chat.completions;
    const s = helper.stream({ ...chatReq, stream: true });
    s.on("chunk", (c) => { for (const ch of c.choices) reasoning += ch.delta?.reasoning_content ?? ""; });
    const m = (await s.finalChatCompletion()).choices[0].message;
    ok &= check("chat stream", { reasoning, content: m.content ?? "",
      calls: (m.tool_calls ?? []).map((t) => ({ name: t.function.name, arguments: parse(t.function.arguments) })) });
  }
  {
    const m = (await openai.chat.completions.create(chatReq)).choices[0].message;
    ok &= check("chat body", { reasoning: m.reasoning_content ?? "", content: m.content ?? "",
      calls: (m.tool_calls ?? []).map((t) => ({ name: t.function.name, arguments: parse(t.function.arguments) })) });
  }
  const fromResponse = (r) => ({
    reasoning: r.output.filter((o) => o.type === "reasoning").map((o) => (o.content ?? []).map((c) => c.text).join("")).join(""),
    // The SDK's output_text joins the message items' text; openai 4.x leaves it off a stream's
    // final response, so join it here then.
    content: r.output_text ?? r.output.filter((o) => o.type === "message")
      .flatMap((o) => o.content).filter((c) => c.type === "output_text").map((c) => c.text).join(""),
    calls: r.output.filter((o) => o.type === "function_call").map((o) => ({ name: o.name, arguments: parse(o.arguments) })),
  });
  {
    const s = openai.responses.stream({ model: "m", input: "hi" });
    ok &= check("responses stream", fromResponse(await s.finalResponse()));
  }
  ok &= check("responses body", fromResponse(await openai.responses.create({ model: "m", input: "hi" })));
  const fromMessage = (m) => ({
    reasoning: m.content.filter((b) => b.type === "thinking").map((b) => b.thinking).join(""),
    content: m.content.filter((b) => b.type === "text").map((b) => b.text).join(""),
    calls: m.content.filter((b) => b.type === "tool_use").map((b) => ({ name: b.name, arguments: b.input })),
  });
  {
    const s = anthropic.messages.stream({ ...msgReq });
    ok &= check("messages stream", fromMessage(await s.finalMessage()));
  }
  ok &= check("messages body", fromMessage(await anthropic.messages.create(msgReq)));
  server.close();
  process.exit(ok ? 0 : 1);
}

main().catch((e) => { console.log("FAIL", e); server.close(); process.exit(1); });
