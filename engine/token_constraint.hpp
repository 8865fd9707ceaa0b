#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace deepinfer::engine {

/// What a sequence may generate next (structured output, DESIGN §5.3): masks a row of logits
/// before sampling and follows each sampled token. Made per sequence by a
/// `token_constraint_factory` from the request's opaque spec (`sampling_params::constraint`); the
/// engine never interprets the spec, so the compiler (recipe/structured) stays out of engine/.
class token_constraint {
public:
  virtual ~token_constraint() = default;
  /// The tokens allowed next, as a bitmask (bit t of word t / 64; tokens past its end are not
  /// allowed), valid until the next call. `tokens_left`: tokens the sequence may still generate,
  /// this one included, before the one reserved for its end (EOS): near 0 only tokens of a
  /// completion that still fits are allowed, so the output always ends complete within max_tokens.
  virtual std::span<const uint64_t> allowed(int64_t tokens_left) = 0;
  /// Follows the sampled token; false when it was not allowed (the constraint is then dead).
  virtual bool advance(int32_t token) = 0;
};

/// Builds a sequence's constraint from its spec, positioned after the tokens it has generated so
/// far (a rerouted or handed-over request carries only its tokens, never the automaton state).
class token_constraint_factory {
public:
  struct result {
    std::unique_ptr<token_constraint> constraint;
    /// Why the spec cannot be followed (it does not compile, or `output` leaves its language).
    std::string error;
  };
  virtual ~token_constraint_factory() = default;
  virtual result make(std::string_view spec, std::span<const int32_t> output) = 0;
  /// Whether `make(spec, ...)` finds the spec compiled already. False: it would compile it first,
  /// which may take up to the compiler's timeout, so a rank has it compiled off its thread before
  /// the request enters the engine.
  virtual bool ready(std::string_view spec) const = 0;
};

} // namespace deepinfer::engine
