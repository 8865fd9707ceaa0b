#include "recipe/protocol/api_ids.hpp"

#include <array>
#include <random>

namespace deepinfer::recipe {

namespace {

std::mt19937_64& generator() {
  // Seeded once per thread from the OS entropy source: ids and seeds differ across processes,
  // restarts and threads without a syscall per draw.
  thread_local std::mt19937_64 g = [] {
    std::random_device rd;
    std::array<std::uint32_t, 8> words{};
    for (auto& w : words)
      w = rd();
    std::seed_seq seq(words.begin(), words.end());
    return std::mt19937_64(seq);
  }();
  return g;
}

std::string random_chars(std::string_view alphabet, std::size_t n) {
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string s(n, '0');
  for (auto& c : s)
    c = alphabet[pick(generator())];
  return s;
}

} // namespace

std::string random_base62(std::size_t n) {
  return random_chars("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", n);
}

std::string random_hex(std::size_t n) { return random_chars("0123456789abcdef", n); }

std::uint64_t random_seed() { return generator()(); }

api_ids api_ids::draw(api_kind api) {
  switch (api) {
    case api_kind::responses: return {"resp_" + random_hex(48), "call_" + random_base62(24) + "_"};
    case api_kind::messages: return {"msg_01" + random_base62(22), "toolu_01" + random_base62(22) + "_"};
    case api_kind::completions: return {"cmpl-" + random_base62(29), "call_" + random_base62(24) + "_"};
    case api_kind::chat: break;
  }
  return {"chatcmpl-" + random_base62(29), "call_" + random_base62(24) + "_"};
}

} // namespace deepinfer::recipe
