// deepinfer-render --api chat|responses|messages [--template dsv41|dsv32] [--ids] [--tokenizer PATH]
//                  [--json-max-depth N]
//
// Reads one request JSON on stdin and prints the rendered DeepSeek prompt exactly (special tokens
// as their spellings, no newline added), or with --ids the token ids separated by spaces. An
// invalid request prints the API's error body on stdout and exits 2; usage errors exit 1. The
// request is parsed under the server's JSON limits (nesting depth 64 unless --json-max-depth).

#include "recipe/base/cli.hpp"
#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"

#if __has_include("recipe/tokenizer/tokenizer.hpp")
#include "recipe/tokenizer/tokenizer.hpp"
#define DEEPINFER_RENDER_HAS_TOKENIZER 1
#endif

#include <cstdlib>
#include <iostream>
#include <iterator>
#include <string>

namespace {

using namespace deepinfer::recipe;

std::string default_tokenizer(template_version v) {
  std::string cache;
  if (const char* c = std::getenv("DEEPINFER_CACHE"))
    cache = c;
  else
    cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache/deepinfer";
  return cache + "/tokenizer/tokenizer_" + (v == template_version::dsv32 ? "v32" : "v41") + ".json";
}

} // namespace

int main(int argc, char** argv) {
  std::string api_name, template_name = "dsv41", tokenizer_file;
  bool ids = false;
  json_limits limits;
  CLI::App app{"deepinfer-render: reads one request JSON on stdin and prints the rendered DeepSeek prompt "
               "(or its token ids). An invalid request prints the API's error body and exits 2; usage "
               "errors exit 1.",
               "deepinfer-render"};
  app.add_option("--api", api_name, "the request's API")->required()->check(CLI::IsMember({"chat", "responses", "messages"}));
  app.add_option("--template", template_name, "the chat template")
    ->check(CLI::IsMember({"dsv41", "dsv32"}))
    ->capture_default_str();
  app.add_flag("--ids", ids, "print the token ids (space-separated) instead of the text");
  app.add_option("--tokenizer", tokenizer_file, "tokenizer.json (default: the template's file in the cache)");
  app.add_option("--json-max-depth", limits.max_depth, "nesting depth the request may reach")
    ->check(CLI::Range(std::size_t{1}, json_limits::max_depth_ceiling))
    ->capture_default_str();
  if (auto rc = deepinfer::parse_command_line(app, argc, argv, 1))
    return *rc;
  const auto api = parse_api_kind(api_name);
  const auto version = *parse_template_version(template_name);
  if (tokenizer_file.empty())
    tokenizer_file = default_tokenizer(version);

  const std::string body((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  auto conv = parse_request(*api, body, limits);
  if (!conv) {
    std::cout << conv.error().body();
    return 2;
  }
  auto table = special_table::from_tokenizer_json(version, tokenizer_file);
  if (!table) {
    std::cerr << "deepinfer-render: " << table.error() << "\n";
    return 1;
  }
  auto segments = render(*conv, *table);
  if (!segments) {
    std::cout << segments.error().body();
    return 2;
  }
  if (!ids) {
    std::cout << to_text(*segments);
    return 0;
  }
#ifdef DEEPINFER_RENDER_HAS_TOKENIZER
  auto tok = tokenizer::load(tokenizer_file);
  if (!tok) {
    std::cerr << "deepinfer-render: cannot load tokenizer " << tokenizer_file << ": " << tok.error << "\n";
    return 1;
  }
  const auto out = tok.value->encode(*segments);
  for (std::size_t i = 0; i < out.size(); ++i)
    std::cout << (i ? " " : "") << out[i];
  return 0;
#else
  std::cerr << "deepinfer-render: --ids needs the tokenizer (recipe/tokenizer), not built in\n";
  return 1;
#endif
}
