// libFuzzer target: arbitrary bodies through the messages request parser and both renderers
// (invariants in fuzz::request_input).

#include "recipe/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return deepinfer::recipe::fuzz::request_input(deepinfer::recipe::api_kind::messages, data, size);
}
