#include "recipe/structured/matcher.hpp"

namespace deepinfer::recipe::so {

drawn_output draw_output(const matcher& m, std::mt19937& rng, std::size_t budget) {
  drawn_output out;
  auto st = m.start();
  for (std::size_t left = budget; left > 0; --left) {
    const auto mask = m.allowed_tokens(st, left);
    const auto ids = token_ids(mask);
    if (ids.empty()) {
      out.fault = "dead";
      return out;
    }
    const auto t = ids[std::uniform_int_distribution<std::size_t>{0, ids.size() - 1}(rng)];
    if (t == m.vocab().eos()) {
      out.fault = m.is_accepting(st) ? nullptr : "end allowed early";
      return out;
    }
    if (!m.advance(st, t)) {
      out.fault = "refused";
      return out;
    }
    out.tokens.push_back(t);
  }
  out.fault = m.is_accepting(st) ? nullptr : "unfinished";
  return out;
}

} // namespace deepinfer::recipe::so
