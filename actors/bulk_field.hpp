#pragma once

// A message field of numbers sent as one block of bytes. CAF 0.17 copies byte vectors and strings
// with one memcpy but writes any other std::vector element by element, through a virtual call each
// (an image's 131,072 embedding floats: ~2.7 % of every sample of a live image load, spent on the
// nodes' multiplexer threads that text requests' messages wait behind; bench/RESULTS.md, "the
// encoder's attention in blocks of 8 patches"). And it writes each float through its own IEEE 754
// packing (caf/detail/ieee_754.hpp), which loops forever on an infinity (a -inf logprob would
// hang the sending node's multiplexer) and turns -0 and NaN into other values. A field wrapped in
// `bulk(...)` in an `inspect` travels as a string of its bytes instead: one memcpy, every bit kept
// (every node runs the same build, so the same layout).

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/detail/stringification_inspector.hpp>
#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/sec.hpp>

namespace deepinfer::actors {

/// A vector field inside an `inspect`: `f(..., bulk(x.embedding), ...)`.
template <class T>
struct bulk_field {
  static_assert(std::is_trivially_copyable_v<T>, "bulk fields are plain numbers");
  std::vector<T>& values;
};

template <class T>
bulk_field<T> bulk(std::vector<T>& values) {
  return {values};
}

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, bulk_field<T>& x) {
  if constexpr (Inspector::writes_state) {
    std::string bytes;
    auto unpack = caf::meta::load_callback([&]() -> caf::error {
      if (bytes.size() % sizeof(T) != 0)
        return caf::make_error(caf::sec::invalid_argument, "a bulk field's byte count is not a whole number of values");
      x.values.resize(bytes.size() / sizeof(T));
      if (!bytes.empty())
        std::memcpy(x.values.data(), bytes.data(), bytes.size());
      return caf::none;
    });
    return f(bytes, unpack);
  } else if constexpr (std::is_same_v<Inspector, caf::detail::stringification_inspector>) {
    // A message printed (a log line, an unexpected message): its size, not its bytes.
    return f(std::to_string(x.values.size()) + " values");
  } else {
    std::string bytes(x.values.size() * sizeof(T), '\0');
    if (!bytes.empty())
      std::memcpy(bytes.data(), x.values.data(), bytes.size());
    return f(bytes);
  }
}

/// A float or double field inside an `inspect`, sent as its bit pattern: `f(..., exact(x.quota_s))`.
/// CAF's own packing of a scalar has the same faults as of a vector's values (it never returns on
/// an infinity, and loses -0 and NaN), and fitted coefficients or timings are not checked for them.
template <class T>
struct exact_field {
  static_assert(std::is_floating_point_v<T> && (sizeof(T) == 4 || sizeof(T) == 8), "float or double");
  T& value;
};

template <class T>
exact_field<T> exact(T& value) {
  return {value};
}

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, exact_field<T>& x) {
  using bits_type = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  if constexpr (Inspector::writes_state) {
    bits_type bits = 0;
    auto unpack = caf::meta::load_callback([&]() -> caf::error {
      std::memcpy(&x.value, &bits, sizeof(T));
      return caf::none;
    });
    return f(bits, unpack);
  } else if constexpr (std::is_same_v<Inspector, caf::detail::stringification_inspector>) {
    return f(x.value);
  } else {
    bits_type bits = 0;
    std::memcpy(&bits, &x.value, sizeof(T));
    return f(bits);
  }
}

} // namespace deepinfer::actors
