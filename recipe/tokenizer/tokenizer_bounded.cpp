#include "recipe/tokenizer/pre_tokenizer.hpp"
#include "recipe/tokenizer/tokenizer_impl.hpp"

#include <algorithm>

namespace deepinfer::recipe {

namespace {

/// Smallest number of tokens a text of total weight `w` can have.
std::size_t tokens_at_least(std::uint64_t w) {
  return static_cast<std::size_t>((w + tokenizer::impl::weight_one - 1) / tokenizer::impl::weight_one);
}

} // namespace

std::uint64_t tokenizer::impl::weight(std::string_view text) const noexcept {
  std::uint64_t w = 0;
  for (const char c : text)
    w += byte_weight[static_cast<unsigned char>(c)];
  return w;
}

tokenizer::bounded_encoding tokenizer::encode_within(const prompt_segments& segments, std::size_t limit) const {
  // 1. One pass over the bytes: a lower bound (weights) and an upper bound (one token per byte).
  std::size_t specials = 0;
  std::size_t bytes = 0;
  std::uint64_t weight = 0;
  for (const auto& s : segments) {
    if (s.is_special()) {
      ++specials;
      continue;
    }
    bytes += s.text.size();
    weight += impl_->weight(s.text);
  }
  bounded_encoding out;
  if (const auto least = specials + tokens_at_least(weight); least > limit) {
    out.fits = false;
    out.at_least = least;
    return out;
  }
  if (specials + bytes <= limit) {
    out.ids = encode(segments);
    return out;
  }
  // 2. Rounds: the ids so far plus the bound of what is left decide after each one.
  const std::size_t round_bytes = std::max<std::size_t>(256 * 1024, 8 * limit);
  prompt_segments round;
  std::size_t in_round = 0;
  std::size_t specials_left = specials;
  auto encode_round = [&] {
    auto ids = encode(round);
    out.ids.insert(out.ids.end(), ids.begin(), ids.end());
    for (const auto& r : round)
      if (r.is_special())
        --specials_left;
      else
        weight -= impl_->weight(r.text);
    round.clear();
    in_round = 0;
    const std::size_t least = out.ids.size() + specials_left + tokens_at_least(weight);
    if (least > limit) {
      out.fits = false;
      out.at_least = least;
      out.exact = specials_left == 0 && weight == 0;
    }
    return out.fits;
  };
  for (const auto& s : segments) {
    if (s.is_special()) {
      round.push_back(s);
      continue;
    }
    const std::string_view t = s.text;
    for (std::size_t from = 0; from < t.size();) {
      const std::size_t to = pre_tokenizer::next_cut(t, from, round_bytes - std::min(in_round, round_bytes - 1));
      round.push_back(prompt_segment::plain(std::string{t.substr(from, to - from)}));
      in_round += to - from;
      from = to;
      if (in_round >= round_bytes && !encode_round())
        return out;
    }
  }
  if (!round.empty())
    encode_round();
  return out;
}

} // namespace deepinfer::recipe
