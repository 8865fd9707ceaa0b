#pragma once

// Test helper of the KV transport suites.

#include <cstddef>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <caf/expected.hpp>

#include "actors/errors.hpp"

namespace deepinfer::actors::testing {

/// The error text of a receive that must fail with `code` (a test failure otherwise).
inline std::string failure(caf::expected<std::vector<std::byte>> r, errc code) {
  BOOST_TEST(!r);
  if (r)
    return {};
  BOOST_TEST(is(r.error(), code), to_string(static_cast<errc>(r.error().code())));
  return error_text(r.error());
}

} // namespace deepinfer::actors::testing
