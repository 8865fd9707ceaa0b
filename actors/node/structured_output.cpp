#include "actors/node/structured_output.hpp"

#include <algorithm>
#include <iterator>
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

/// The spec's first byte for each kind (one table both ways).
constexpr std::pair<recipe::so::constraint_kind, char> kind_letters[] = {
  {recipe::so::constraint_kind::json_schema, 's'}, {recipe::so::constraint_kind::json_object, 'o'},
  {recipe::so::constraint_kind::regex, 'r'},       {recipe::so::constraint_kind::grammar, 'g'},
  {recipe::so::constraint_kind::tool_calls, 't'},
};

} // namespace

structured_output::structured_output(std::string tokenizer_path, recipe::so::compiler::config cfg)
    : tokenizer_path_(std::move(tokenizer_path)), cfg_(cfg) {}

std::string structured_output::spec_of(const recipe::so::constraint& c) {
  for (auto [kind, letter] : kind_letters)
    if (kind == c.kind)
      return std::string(1, letter) + c.text;
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

expected<std::shared_ptr<const recipe::so::matcher>, std::string> structured_output::compile(std::string_view spec) {
  if (spec.empty())
    return std::string{"empty structured-output spec"};
  recipe::so::constraint c;
  const auto* entry = std::find_if(std::begin(kind_letters), std::end(kind_letters),
                                   [&](const auto& e) { return e.second == spec.front(); });
  if (entry == std::end(kind_letters))
    return std::string{"unknown structured-output spec kind"};
  c.kind = entry->first;
  c.text = std::string{spec.substr(1)};
  return compile(c);
}

engine::token_constraint_factory::result structured_output::make(std::string_view spec,
                                                                 std::span<const int32_t> output) {
  auto m = compile(spec);
  if (!m)
    return {nullptr, "the structured-output constraint cannot be compiled: " + m.error()};
  auto state = (*m)->start();
  // A rerouted or handed-over request: follow what it generated before.
  for (auto t : output)
    if (!(*m)->advance(state, t))
      return {nullptr, "the output so far does not follow its structured-output constraint"};
  return {std::make_unique<matcher_constraint>(*m, std::move(state)), {}};
}

} // namespace deepinfer::actors
