#include "actors/node/structured_output.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <utility>


#include "actors/log.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

namespace deepinfer::actors {

namespace {

/// One sequence's constraint: a matcher and where the output is in it.
class matcher_constraint final : public engine::token_constraint {
public:
  matcher_constraint(std::shared_ptr<const recipe::so::matcher> m, recipe::so::matcher_state s)
      : m_(std::move(m)), state_(std::move(s)) {}

  std::span<const uint64_t> allowed(int64_t tokens_left) override {
    // The vocabulary's own tokens only (it has no added tokens; the model's rows past it are
    // never allowed, the engine treats missing words as all blocked).
    mask_ = m_->allowed_tokens(state_, static_cast<std::size_t>(std::max<int64_t>(tokens_left, 0)));
    return mask_;
  }

  bool advance(int32_t token) override { return m_->advance(state_, token); }

private:
  std::shared_ptr<const recipe::so::matcher> m_;
  recipe::so::matcher_state state_;
  recipe::so::token_mask mask_;
};

/// A constraint that starts after a token (thinking on: `</think>`): until then any token but
/// EOS (the output must not end before the format), and only that token once what is left just
/// fits it and the format's shortest completion; then the format's matcher from its start.
class after_token_constraint final : public engine::token_constraint {
public:
  after_token_constraint(std::shared_ptr<const recipe::so::matcher> m, int32_t opener)
      : m_(std::move(m)), opener_(opener),
        completion_(static_cast<int64_t>(m_->shortest_completion_length(m_->start()))) {
    const auto n = m_->vocab().size();
    free_.assign((n + 63) / 64, ~uint64_t{0});
    if (n % 64 != 0)
      free_.back() = (uint64_t{1} << (n % 64)) - 1;
    clear(free_, m_->vocab().eos());
    only_opener_.assign(free_.size(), 0);
    if (opener_ >= 0 && static_cast<std::size_t>(opener_) < n)
      only_opener_[static_cast<std::size_t>(opener_) >> 6] |= uint64_t{1} << (opener_ & 63);
  }

  std::span<const uint64_t> allowed(int64_t tokens_left) override {
    if (inner_)
      return inner_->allowed(tokens_left);
    return tokens_left <= 1 + completion_ ? std::span<const uint64_t>{only_opener_} : std::span<const uint64_t>{free_};
  }

  bool advance(int32_t token) override {
    if (inner_)
      return inner_->advance(token);
    if (token == opener_) {
      inner_.emplace(m_, m_->start());
      return true;
    }
    return token != m_->vocab().eos();
  }

private:
  static void clear(recipe::so::token_mask& m, int32_t t) {
    if (t >= 0 && static_cast<std::size_t>(t >> 6) < m.size())
      m[static_cast<std::size_t>(t) >> 6] &= ~(uint64_t{1} << (t & 63));
  }

  std::shared_ptr<const recipe::so::matcher> m_;
  int32_t opener_;
  int64_t completion_;
  recipe::so::token_mask free_, only_opener_;
  std::optional<matcher_constraint> inner_;
};

/// A spec that starts after a token: `@ID:` before the constraint's own spec.
struct split_spec {
  std::optional<int32_t> after;
  std::string_view rest;
};

split_spec split(std::string_view spec) {
  if (spec.empty() || spec.front() != '@')
    return {std::nullopt, spec};
  const auto colon = spec.find(':');
  if (colon == std::string_view::npos)
    return {std::nullopt, {}};
  int32_t id = -1;
  auto r = std::from_chars(spec.data() + 1, spec.data() + colon, id);
  if (r.ec != std::errc{} || r.ptr != spec.data() + colon)
    return {std::nullopt, {}};
  return {id, spec.substr(colon + 1)};
}

/// The spec's first byte for each kind (one table both ways).
constexpr std::pair<recipe::so::constraint_kind, char> kind_letters[] = {
  {recipe::so::constraint_kind::json_schema, 's'}, {recipe::so::constraint_kind::json_object, 'o'},
  {recipe::so::constraint_kind::regex, 'r'},       {recipe::so::constraint_kind::grammar, 'g'},
  {recipe::so::constraint_kind::tool_calls, 't'},
};

} // namespace

structured_output::structured_output(std::string tokenizer_path, recipe::so::compiler::config cfg)
    : tokenizer_path_(std::move(tokenizer_path)), cfg_(cfg) {}

std::string structured_output::spec_of(const recipe::so::constraint& c, std::optional<int32_t> after_token) {
  std::string prefix = after_token ? "@" + std::to_string(*after_token) + ":" : std::string{};
  // JSON spacing: `w` + the most whitespace bytes in a row + `;` (no letter of a kind is `w`).
  if (c.json_whitespace)
    prefix += "w" + std::to_string(*c.json_whitespace) + ";";
  for (auto [kind, letter] : kind_letters)
    if (kind == c.kind)
      return prefix + std::string(1, letter) + c.text;
  return {};
}

expected<recipe::so::compiler*, std::string> structured_output::get() {
  std::call_once(once_, [this] {
    auto tok = recipe::tokenizer::load(tokenizer_path_);
    if (!tok) {
      error_ = "no tokenizer for structured output (" + tokenizer_path_ + "): " + tok.error;
      return;
    }
    compiler_ = std::make_unique<recipe::so::compiler>(recipe::so::vocabulary::of(*tok.value), cfg_);
    log().info("structured output: vocabulary of {} tokens loaded", compiler_->vocab().size());
    loaded_.store(true, std::memory_order_release);
  });
  if (!compiler_)
    return error_;
  return compiler_.get();
}

expected<std::shared_ptr<const recipe::so::matcher>, std::string>
structured_output::compile(const recipe::so::constraint& c) {
  auto comp = get();
  if (!comp)
    return comp.error();
  return (*comp)->compile(c);
}

expected<recipe::so::constraint, std::string> structured_output::constraint_of(std::string_view spec) {
  spec = split(spec).rest;
  if (spec.empty())
    return std::string{"empty structured-output spec"};
  recipe::so::constraint c;
  if (spec.front() == 'w') {
    const auto semi = spec.find(';');
    std::uint32_t ws = 0;
    const auto r = std::from_chars(spec.data() + 1, spec.data() + std::min(semi, spec.size()), ws);
    if (semi == std::string_view::npos || r.ec != std::errc{} || r.ptr != spec.data() + semi || semi + 1 >= spec.size())
      return std::string{"bad whitespace bound in a structured-output spec"};
    c.json_whitespace = ws;
    spec.remove_prefix(semi + 1);
  }
  const auto* entry = std::find_if(std::begin(kind_letters), std::end(kind_letters),
                                   [&](const auto& e) { return e.second == spec.front(); });
  if (entry == std::end(kind_letters))
    return std::string{"unknown structured-output spec kind"};
  c.kind = entry->first;
  c.text = std::string{spec.substr(1)};
  return c;
}

expected<std::shared_ptr<const recipe::so::matcher>, std::string> structured_output::compile(std::string_view spec) {
  auto c = constraint_of(spec);
  if (!c)
    return std::move(c).error();
  return compile(*c);
}

bool structured_output::ready(std::string_view spec) const {
  // Not loaded yet: the first compile loads the vocabulary too (seconds), off the rank's thread.
  if (!loaded_.load(std::memory_order_acquire))
    return false;
  auto c = constraint_of(spec);
  // A spec that does not parse fails at once in make(): nothing to wait for.
  return !c || compiler_->cached(*c);
}

engine::token_constraint_factory::result structured_output::make(std::string_view spec,
                                                                 std::span<const int32_t> output) {
  auto m = compile(spec);
  if (!m)
    return {nullptr, "the structured-output constraint cannot be compiled: " + m.error()};
  if (auto after = split(spec).after) {
    auto c = std::make_unique<after_token_constraint>(*m, *after);
    for (auto t : output)
      if (!c->advance(t))
        return {nullptr, "the output so far does not follow its structured-output constraint"};
    return {std::move(c), {}};
  }
  auto state = (*m)->start();
  // A rerouted or handed-over request: follow what it generated before.
  for (auto t : output)
    if (!(*m)->advance(state, t))
      return {nullptr, "the output so far does not follow its structured-output constraint"};
  return {std::make_unique<matcher_constraint>(*m, std::move(state)), {}};
}

} // namespace deepinfer::actors
