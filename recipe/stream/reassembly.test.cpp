// The official clients rebuild our streams: encoders' SSE output and bodies are served to the
// `openai` and `@anthropic-ai/sdk` npm packages by recipe/testdata/reassemble.js.

#include "recipe/render/renderer.hpp"
#include "recipe/stream/chat_encoder.hpp"
#include "recipe/stream/messages_encoder.hpp"
#include "recipe/stream/responses_encoder.hpp"
#include "recipe/stream/stream_parser.hpp"
#include "recipe/testdata/paths.hpp"
#include "recipe/testdata/samples.hpp"
#include "recipe/testdata/tokenizers.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace deepinfer::recipe;

namespace {

void write(const std::filesystem::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

// Encodes the turn's tokens through parser + encoder in chunks of `chunk` tokens.
template <class Encoder, class Start>
std::string stream_through(Encoder& enc, Start start, const std::vector<token_id>& ids, const tokenizer& tok,
                           const special_table& t, std::size_t chunk, usage_counts usage) {
  stream_parser p({true, "call_"}, t, tok);
  std::string out = start();
  for (std::size_t at = 0; at < ids.size(); at += chunk) {
    const auto n = std::min(chunk, ids.size() - at);
    const auto& evs = p.feed(std::span(ids).subspan(at, n));
    auto c = p.counts();
    usage.completion_tokens = c.completion_tokens;
    usage.reasoning_tokens = c.reasoning_tokens;
    out += enc.encode(evs, usage);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(reassembly)

BOOST_AUTO_TEST_CASE(official_clients_rebuild_text_reasoning_and_tool_calls) {
  const auto clients = test::cache_dir() + "/api-clients/node_modules";
  BOOST_REQUIRE_MESSAGE(std::filesystem::exists(clients + "/openai/package.json"),
                        "official clients missing; run scripts/prepare_api_clients.sh");
  const auto& tok = test::real_tokenizer(template_version::dsv41);
  const auto* table = &test::real_table(template_version::dsv41);
  const message m = test::sample_turn(true);
  const auto ids = tok.encode(render_completion(m, *table, true));

  const auto dir = std::filesystem::temp_directory_path() / ("deepinfer-reassembly-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  usage_counts usage{120, 64, 0, 0};

  chat_encoder chat(chat_encoder::config{{"chatcmpl-t", "deepseek-v4.1", 1700000000, true}});
  write(dir / "chat.sse", stream_through(chat, [&] { return chat.start(); }, ids, tok, *table, 3, usage));
  responses_encoder resp({"resp_t", "deepseek-v4.1", 1700000000, nlohmann::ordered_json::object()});
  write(dir / "responses.sse",
        stream_through(resp, [&] { return resp.start(); }, ids, tok, *table, 5, usage));
  messages_encoder msgs({"msg_t", "deepseek-v4.1"});
  write(dir / "messages.sse",
        stream_through(msgs, [&] { return msgs.start(usage); }, ids, tok, *table, 1, usage));
  usage.completion_tokens = static_cast<std::int64_t>(ids.size());
  write(dir / "chat.json", chat.body(usage));
  write(dir / "responses.json", resp.body(usage));
  write(dir / "messages.json", msgs.body(usage));

  nlohmann::ordered_json want;
  want["reasoning"] = *m.reasoning;
  want["content"] = m.content.front().value;
  want["calls"] = nlohmann::ordered_json::array();
  for (const auto& c : m.tool_calls)
    want["calls"].push_back({{"name", c.name}, {"arguments", nlohmann::ordered_json::parse(c.arguments)}});
  write(dir / "expected.json", want.dump());

  const std::string cmd = "NODE_PATH='" + clients + "' node '" + test::source_dir() +
                          "/recipe/testdata/reassemble.js' '" + dir.string() + "' 2>&1";
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  BOOST_REQUIRE(f);
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f))
    out.append(buf, n);
  const int rc = ::pclose(f);
  BOOST_TEST_MESSAGE(out);
  BOOST_TEST(rc == 0, "reassemble.js failed:\n" << out);
  if (rc == 0)
    std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
