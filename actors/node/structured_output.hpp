#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "engine/token_constraint.hpp"
#include "recipe/base/expected.hpp"
#include "recipe/structured/compiler.hpp"

namespace deepinfer::actors {

/// A process's structured-output compiler (DESIGN §5.3), shared by its entrypoint (which
/// compiles a request's constraint before it is placed, so a schema it cannot enforce is a 400)
/// and its engine ranks, whose `engine::token_constraint_factory` it is (a cache hit then, or a
/// compile on a node that has not seen the schema). Built at the first constrained request: the
/// vocabulary of 129,280 tokens is loaded from the node's tokenizer only when needed.
/// Thread-safe.
class structured_output final : public engine::token_constraint_factory {
public:
  explicit structured_output(std::string tokenizer_path, recipe::so::compiler::config cfg = {});

  /// The spec a constraint travels as in `engine::sampling_params::constraint`. With
  /// `after_token` (thinking on: the id of `</think>`) the output is free until that token, then
  /// follows `c` from its start (only the reasoning's end is forced, once what is left just fits
  /// it and `c`'s shortest completion; EOS is not allowed before).
  static std::string spec_of(const recipe::so::constraint& c, std::optional<int32_t> after_token = std::nullopt);

  /// Compiles `c` (cached by constraint hash); the reason when it cannot be enforced.
  expected<std::shared_ptr<const recipe::so::matcher>, std::string> compile(const recipe::so::constraint& c);
  /// The same from a spec.
  expected<std::shared_ptr<const recipe::so::matcher>, std::string> compile(std::string_view spec);

  /// The engine side: a sequence's token masks from the matcher of `spec`, after `output`.
  result make(std::string_view spec, std::span<const int32_t> output) override;
  /// Whether `spec` is compiled here (false before the first compile loads the vocabulary).
  bool ready(std::string_view spec) const override;

  /// How long an asker waits for a compiler actor's answer: the compile timeout bounds the
  /// compile, the margin covers the compiler's queue and the hop.
  static std::chrono::milliseconds answer_wait(std::chrono::milliseconds compile_timeout) {
    return compile_timeout * 2 + std::chrono::seconds{3};
  }

  /// The constraint a spec carries (without its `@ID:` start).
  static expected<recipe::so::constraint, std::string> constraint_of(std::string_view spec);

private:
  /// The compiler, or why there is none (no tokenizer); loads it once.
  expected<recipe::so::compiler*, std::string> get();

  std::string tokenizer_path_;
  recipe::so::compiler::config cfg_;
  std::once_flag once_;
  std::atomic<bool> loaded_{false};
  std::unique_ptr<recipe::so::compiler> compiler_;
  std::string error_;
};

} // namespace deepinfer::actors
