// bench_so_budget_band [REPS] : what a budgeted structured-output mask costs near the end of
// max_tokens. Far from it `allowed_tokens(state, left)` is the plain mask; within the matcher's
// horizon of the forced completion every allowed token is advanced and its own completion
// checked, so that no token can leave an output that no longer fits. The horizon is 16 tokens
// plus twice the most one grammar choice adds to the shortest completion (an array item with
// required keys, an optional key holding an object): printed per schema, with the time of one
// mask far away, inside the band in a string (every token allowed) and after a value.

#include "bench/median_ms.hpp"
#include "recipe/structured/compiler.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace deepinfer::recipe;
using deepinfer::bench::median_ms;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto tok = test::shared("tokenizer_v41.json");
  so::compiler comp{so::vocabulary::of(*tok)};
  struct shape {
    const char* name;
    const char* schema;
    const char* in_string;    // a prefix that ends inside a free string
    const char* after_value;  // a prefix that ends after a complete value
  };
  const std::vector<shape> shapes{
      {"flat object", R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name","n"]})",
       R"({"name":"ab)", R"({"name":"ab","n":1)"},
      {"array of 5-key items",
       R"({"type":"array","items":{"type":"object","properties":{"id":{"type":"number"},"title":{"type":"string"},
          "description":{"type":"string"},"answers":{"type":"array","items":{"type":"string"}},"order":{"type":"number"}},
          "required":["id","title","description","answers","order"],"additionalProperties":false}})",
       R"([{"id":0,"title":"ab)", R"([{"id":0,"title":"","description":"","answers":[],"order":0})"},
  };
  std::printf("%-22s %8s %8s | %10s %12s %12s\n", "schema", "forced", "horizon", "far (us)", "string (us)", "value (us)");
  for (const auto& s : shapes) {
    auto m = comp.compile({so::constraint_kind::json_schema, s.schema});
    if (!m) {
      std::fprintf(stderr, "%s: %s\n", s.name, m.error().c_str());
      return 1;
    }
    const auto& mt = **m;
    auto in_string = mt.start(), after = mt.start();
    mt.advance_bytes(in_string, s.in_string);
    mt.advance_bytes(after, s.after_value);
    const auto f = mt.shortest_completion_length(in_string);
    const auto h = mt.horizon();
    const double far = 1000 * median_ms(reps, [&] { mt.allowed_tokens(in_string, f + h + 1000); });
    const double band_string = 1000 * median_ms(reps, [&] { mt.allowed_tokens(in_string, f + h); });
    const auto fa = mt.shortest_completion_length(after);
    const double band_value = 1000 * median_ms(reps, [&] { mt.allowed_tokens(after, fa + h); });
    std::printf("%-22s %8zu %8zu | %10.1f %12.1f %12.1f\n", s.name, f, h, far, band_string, band_value);
  }
  return 0;
}
