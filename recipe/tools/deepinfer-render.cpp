// deepinfer-render --api chat|responses|messages [--template dsv41|dsv32] [--ids] [--tokenizer PATH]
//                  [--json-max-depth N]
//
// Reads one request JSON on stdin and prints the rendered DeepSeek prompt exactly (special tokens
// as their spellings, no newline added), or with --ids the token ids separated by spaces. An
// invalid request prints the API's error body on stdout and exits 2; usage errors exit 1. The
// request is parsed under the server's JSON limits (nesting depth 64 unless --json-max-depth).

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

int usage(const std::string& why) {
  std::cerr << "deepinfer-render: " << why
            << "\nusage: deepinfer-render --api chat|responses|messages [--template dsv41|dsv32] [--ids] "
               "[--tokenizer PATH] [--json-max-depth N]\n";
  return 1;
}

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
  std::optional<api_kind> api;
  template_version version = template_version::dsv41;
  bool ids = false;
  std::string tokenizer_file;
  json_limits limits;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--api") {
      api = parse_api_kind(next());
      if (!api)
        return usage("--api must be chat, responses or messages");
    } else if (a == "--template") {
      auto v = parse_template_version(next());
      if (!v)
        return usage("--template must be dsv41 or dsv32");
      version = *v;
    } else if (a == "--ids") {
      ids = true;
    } else if (a == "--tokenizer") {
      tokenizer_file = next();
    } else if (a == "--json-max-depth") {
      const auto v = std::atol(next().c_str());
      if (v < 1 || static_cast<std::size_t>(v) > json_limits::max_depth_ceiling)
        return usage("--json-max-depth must be between 1 and " + std::to_string(json_limits::max_depth_ceiling));
      limits.max_depth = static_cast<std::size_t>(v);
    } else {
      return usage("unknown argument " + a);
    }
  }
  if (!api)
    return usage("--api is required");
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
