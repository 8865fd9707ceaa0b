#include "recipe/protocol/api_ids.hpp"

#include <algorithm>
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

api_ids api_ids::draw(api_kind api, int choices) {
  api_ids ids;
  const auto tool_prefix = [api] {
    return api == api_kind::messages ? "toolu_01" + random_base62(22) + "_" : "call_" + random_base62(24) + "_";
  };
  switch (api) {
    case api_kind::responses: ids.response = "resp_" + random_hex(48); break;
    case api_kind::messages: ids.response = "msg_01" + random_base62(22); break;
    case api_kind::completions: ids.response = "cmpl-" + random_base62(29); break;
    case api_kind::chat: ids.response = "chatcmpl-" + random_base62(29); break;
  }
  for (int k = 0; k < std::max(choices, 1); ++k)
    ids.tool_prefixes.push_back(tool_prefix());
  return ids;
}

} // namespace deepinfer::recipe
