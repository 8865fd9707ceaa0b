// bench_parse_body [REPS] : time to parse and validate request bodies of 1, 4 and 8 MiB
// (recipe::parse_request, one thread) in four shapes: an agent conversation (many messages and
// tool calls), one huge message, a wide unknown object (many keys) and deep-ish values (60
// levels, repeated). Next to it, nlohmann's own DOM parser on the same bytes (what the server
// used before issue 14; skipped for the wide shape past 1 MiB, where it is quadratic).
// Goal (issue 14): linear in the size, <= 50 ms per MiB on one core.

#include "bench/median_ms.hpp"
#include "recipe/json_parse.hpp"
#include "recipe/protocol/parse_request.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace deepinfer::recipe;
using deepinfer::bench::median_ms;

namespace {

constexpr std::size_t mib = 1 << 20;

std::string close_body(std::string body) {
  body += "]}";
  return body;
}

// Messages of ~2 KB each (user text, assistant tool calls, tool results) up to `size` bytes.
std::string agent(std::size_t size) {
  std::string b = R"({"model":"m","max_tokens":16,"tools":[{"type":"function","function":{"name":"run","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}],"messages":[)";
  const std::string text(1800, 'x');
  for (int i = 0; b.size() < size - 4096; ++i) {
    if (i)
      b += ',';
    switch (i % 3) {
      case 0: b += R"({"role":"user","content":")" + text + "\"}"; break;
      case 1:
        b += R"({"role":"assistant","content":null,"tool_calls":[{"id":"c)" + std::to_string(i) +
             R"(","type":"function","function":{"name":"run","arguments":"{\"cmd\":\")" + text + R"(\"}"}}]})";
        break;
      default: b += R"({"role":"tool","tool_call_id":"c)" + std::to_string(i - 1) + R"(","content":")" + text + "\"}";
    }
  }
  return close_body(b);
}

std::string one_message(std::size_t size) {
  return R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":")" + std::string(size - 80, 'y') +
         "\"}]}";
}

std::string wide(std::size_t size) {
  std::string b = R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"x"}],"junk":{)";
  for (int i = 0; b.size() < size - 32; ++i)
    b += (i ? ",\"" : "\"") + std::to_string(i) + "\":0";
  return b + "}}";
}

std::string deepish(std::size_t size) {
  std::string b = R"({"model":"m","max_tokens":16,"messages":[{"role":"user","content":"x"}],"junk":[)";
  const std::string v = std::string(59, '[') + "1" + std::string(59, ']');
  for (int i = 0; b.size() < size - 256; ++i)
    b += (i ? "," : "") + v;
  return b + "]}";
}

} // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  struct shape {
    const char* name;
    std::string (*make)(std::size_t);
  };
  const shape shapes[] = {{"agent", agent}, {"one_message", one_message}, {"wide", wide}, {"deep60", deepish}};
  std::printf("%-12s %5s %12s %10s %14s\n", "shape", "MiB", "parse_ms", "ms/MiB", "nlohmann_ms");
  for (const auto& s : shapes) {
    for (const std::size_t n : {std::size_t{1}, std::size_t{4}, std::size_t{8}}) {
      const std::string body = s.make(n * mib);
      bool ok = true;
      const double ms = median_ms(reps, [&] { ok = parse_request(api_kind::chat, body).has_value(); });
      if (!ok) {
        std::fprintf(stderr, "%s %zu MiB: refused: %s\n", s.name, n,
                     parse_request(api_kind::chat, body).error().message.c_str());
        return 1;
      }
      const bool baseline = std::string_view{s.name} != "wide" || n == 1;
      const double base = baseline ? median_ms(std::max(1, reps / 2), [&] {
        auto j = nlohmann::ordered_json::parse(body);
        (void)j;
      })
                                   : -1;
      std::printf("%-12s %5zu %12.1f %10.1f %14s\n", s.name, n, ms, ms / static_cast<double>(body.size()) * mib,
                  baseline ? std::to_string(base).substr(0, std::to_string(base).find('.') + 2).c_str() : "(quadratic)");
    }
  }
  return 0;
}
