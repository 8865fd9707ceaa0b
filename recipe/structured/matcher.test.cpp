#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <random>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::token_id;
using deepinfer::recipe::so::test::schema_matcher;
using deepinfer::recipe::so::test::shared_tokenizer;

namespace {

const char* const schemas[] = {
  R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"n":{"type":"integer","minimum":-5,"maximum":500},
     "ok":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["a","b","c"]},"minItems":1,"maxItems":3}},
     "required":["name","n","tags"],"additionalProperties":false})",
  R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"string","format":"date"},{"type":"null"}]},"minItems":2})",
  R"({"$defs":{"t":{"type":"object","properties":{"v":{"type":"string"},"c":{"type":"array","items":{"$ref":"#/$defs/t"}}},"required":["v","c"]}},"$ref":"#/$defs/t"})",
  R"({"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"string","minLength":3}},"required":["c"]}},"required":["b"]}},"required":["a"]})",
};

} // namespace

BOOST_AUTO_TEST_SUITE(structured_matcher)

BOOST_AUTO_TEST_CASE(masks_agree_with_advance_on_every_token) {
  auto m = schema_matcher(schemas[0]);
  const auto& v = m->vocab();
  // States along a valid instance: each mask bit must equal whether advance accepts the token.
  const auto ids = shared_tokenizer().encode(R"({"name":"Zoë \"q\"","n":-3,"tags":["a","c"]})");
  auto st = m->start();
  for (std::size_t k = 0; k <= ids.size(); k += 3) {
    const auto mask = m->allowed_tokens(st);
    std::size_t disagree = 0;
    for (std::size_t t = 0; t < v.size(); ++t) {
      auto next = st;
      const bool ok = m->advance(next, static_cast<token_id>(t));
      disagree += ok != mask_test(mask, static_cast<token_id>(t));
    }
    BOOST_TEST(disagree == 0u, "at token " << k);
    for (std::size_t j = k; j < std::min(k + 3, ids.size()); ++j)
      BOOST_TEST_REQUIRE(m->advance(st, ids[j]));
  }
  BOOST_TEST(m->is_accepting(st));
}

BOOST_AUTO_TEST_CASE(forced_completion_always_yields_a_complete_valid_instance) {
  std::mt19937 rng{42};
  for (const char* schema : schemas) {
    auto m = schema_matcher(schema);
    // A budget below the shortest completion from the start cannot be met; from there on it is.
    const auto least = m->shortest_completion_length(m->start());
    for (std::size_t budget : {least, least + 1, least + 5, least + 20, least + 60}) {
      for (int run = 0; run < 3; ++run) {
        auto st = m->start();
        std::vector<token_id> out;
        bool ended = false;
        for (std::size_t left = budget; left > 0 && !ended; --left) {
          const auto ids = token_ids(m->allowed_tokens(st, left));
          BOOST_TEST_REQUIRE(!ids.empty());
          const auto t = ids[std::uniform_int_distribution<std::size_t>{0, ids.size() - 1}(rng)];
          if (t == m->vocab().eos()) {
            ended = true;
            break;
          }
          BOOST_TEST_REQUIRE(m->advance(st, t));
          out.push_back(t);
        }
        const auto text = shared_tokenizer().decode(out);
        BOOST_TEST(m->is_accepting(st), schema << " budget " << budget << ": " << text);
        BOOST_TEST(out.size() <= budget);
        BOOST_TEST(nlohmann::json::accept(text), text);
      }
    }
  }
}

// One token may open a structure whose shortest completion is long (an array's next item with
// five required keys, an optional key holding an object): whatever the budget, every token the
// budgeted mask allows leaves a completion that still fits. (A fixed 16-token look-ahead let `,`
// through 17 tokens before the end, and the next item could not be finished.)
BOOST_AUTO_TEST_CASE(budget_holds_when_one_token_opens_a_long_structure) {
  const std::vector<std::pair<const char*, const char*>> cases{
      {R"({"type":"array","items":{"type":"object","properties":{"id":{"type":"number"},"title":{"type":"string"},
          "description":{"type":"string"},"answers":{"type":"array","items":{"type":"string"}},"order":{"type":"number"}},
          "required":["id","title","description","answers","order"],"additionalProperties":false}})",
       R"([{"id":0,"title":"","description":"","answers":[],"order":0})"},
      {R"({"type":"object","properties":{"a":{"type":"integer"},"meta":{"type":"object","properties":{
          "created_by_user":{"type":"string","minLength":8},"last_modified_by":{"type":"string","minLength":8},
          "revision":{"type":"integer"}},"required":["created_by_user","last_modified_by","revision"]}},"required":["a"]})",
       R"({"a":1)"}};
  for (const auto& [schema, prefix] : cases) {
    auto m = schema_matcher(schema);
    auto st = m->start();
    BOOST_TEST_REQUIRE(m->advance_bytes(st, prefix));
    const auto least = m->shortest_completion_length(st);
    for (std::size_t left = least; left < least + 80; ++left)
      for (auto t : token_ids(m->allowed_tokens(st, left))) {
        if (t == m->vocab().eos())
          continue;
        auto next = st;
        BOOST_TEST_REQUIRE(m->advance(next, t));
        BOOST_TEST(m->shortest_completion_length(next) + 1 <= left,
                   prefix << " + token " << t << " with " << left << " left needs " << m->shortest_completion_length(next));
      }
  }
}

// The budget's forced completion must not switch once it starts: after its first token, the
// rest of it is again the forced completion. Equally short completions that tokenize differently
// are where it switched: two branches whose shortest outputs have the same length (the smaller
// bytes start with a longer key), and an enum beside a pattern of the same length.
BOOST_AUTO_TEST_CASE(forced_completion_keeps_to_itself_token_after_token) {
  std::vector<std::string> cases(std::begin(schemas), std::end(schemas));
  cases.push_back(R"({"anyOf":[{"type":"object","properties":{"calculate_emission_savings":{"type":"object",
      "properties":{"energy_type":{"type":"string"},"usage_duration":{"type":"integer"}},"required":["energy_type","usage_duration"],
      "additionalProperties":false}},"required":["calculate_emission_savings"],"additionalProperties":false},
      {"type":"object","properties":{"timezone.convert":{"type":"object","properties":{"time":{"type":"string"},
      "from_timezone":{"type":"string"},"to_timezone":{"type":"string"}},"required":["time","from_timezone","to_timezone"],
      "additionalProperties":false}},"required":["timezone.convert"],"additionalProperties":false}]})");
  cases.push_back(R"({"type":"object","properties":{"type":{"anyOf":[{"enum":["app","application"]},{"type":"string","pattern":"^lib$"}]},
      "files":{"type":"array","items":{"type":"string"}}},"required":["type"]})");
  cases.push_back(R"({"anyOf":[{"type":"object","properties":{"b":{"type":"integer"},"zz":{"type":"integer"}},"required":["zz"]},
      {"type":"object","properties":{"aaaa":{"type":"boolean"}},"required":["aaaa"]}]})");
  std::mt19937 rng{7};
  for (const auto& schema : cases) {
    auto m = schema_matcher(schema, 4);
    for (int walk = 0; walk < 20; ++walk) {
      auto st = m->start();
      for (int step = 0; step < 40 && !m->is_accepting(st); ++step) {
        const auto forced = m->forced_completion(st);
        BOOST_TEST_REQUIRE(!forced.empty());
        auto next = st;
        BOOST_TEST_REQUIRE(m->advance(next, forced.front()));
        const auto after = m->forced_completion(next);
        BOOST_TEST((std::vector<token_id>(forced.begin() + 1, forced.end()) == after),
                   schema << " after " << m->vocab().bytes(forced.front()) << ": "
                          << m->shortest_completion_bytes(st) << " became " << m->shortest_completion_bytes(next));
        // Then a random allowed token, to test the next state.
        const auto ids = token_ids(m->allowed_tokens(st));
        const auto t = ids[std::uniform_int_distribution<std::size_t>{0, ids.size() - 1}(rng)];
        if (t == m->vocab().eos())
          break;
        BOOST_TEST_REQUIRE(m->advance(st, t));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(shortest_completion_closes_every_open_structure) {
  auto m = schema_matcher(schemas[3]);
  auto st = m->start();
  BOOST_TEST(!deepinfer::recipe::so::test::accepts(*m, R"({"a":{"b":{"c":"x"}}})"));
  BOOST_TEST(deepinfer::recipe::so::test::accepts(*m, R"({"a":{"b":{"c":"xyz"}}})"));
  BOOST_TEST_REQUIRE(m->advance_bytes(st, R"({"a":{"b":{"c":"x)"));
  const auto w = m->shortest_completion_bytes(st);
  BOOST_TEST(w.size() == 6u);  // two more characters (minLength 3), then close everything
  BOOST_TEST(w.substr(2) == R"("}}})");
  auto done = st;
  BOOST_TEST_REQUIRE(m->advance_bytes(done, w));
  BOOST_TEST(m->is_accepting(done));
  BOOST_TEST(m->shortest_completion_length(st) == m->forced_completion(st).size());
  BOOST_TEST(m->forced_completion(done).empty());
}

BOOST_AUTO_TEST_CASE(state_is_a_plain_copyable_value) {
  auto m = schema_matcher(schemas[0]);
  auto a = m->start();
  BOOST_TEST_REQUIRE(m->advance_bytes(a, R"({"name":"x")"));
  auto b = a;  // e.g. sent with a rerouted request
  BOOST_TEST_REQUIRE(m->advance_bytes(b, R"(,"n":1,"tags":["b"]})"));
  BOOST_TEST(m->is_accepting(b));
  BOOST_TEST(!m->is_accepting(a));
  BOOST_TEST(!m->advance_bytes(a, "]"));
  BOOST_TEST(a.dead());
}

BOOST_AUTO_TEST_CASE(compiled_constraints_are_cached_by_text_and_vocabulary) {
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto x = c.compile({constraint_kind::json_schema, R"({"type":"integer"})"});
  auto y = c.compile({constraint_kind::json_schema, R"({"type":"integer"})"});
  BOOST_TEST_REQUIRE(x.has_value());
  BOOST_TEST(x->get() == y->get());
  BOOST_TEST(c.cached_bytes() > 0u);
}

// Key unions and other-key lexemes are built while requests use a constraint: the cache's
// bound counts them from the next use on, not only what the compile built.
BOOST_AUTO_TEST_CASE(the_cache_counts_the_parts_built_on_first_use) {
  compiler c{vocabulary::of(deepinfer::recipe::so::test::shared_tokenizer())};
  std::string props;
  for (int i = 0; i < 30; ++i)
    props += (i ? "," : "") + std::string{"\"key"} + std::to_string(i) + "\":{\"type\":\"integer\"}";
  const constraint schema{constraint_kind::json_schema, R"({"type":"object","properties":{)" + props + "}}"};
  auto m = c.compile(schema);
  BOOST_TEST_REQUIRE(m.has_value());
  const auto at_compile = c.cached_bytes();
  BOOST_TEST(deepinfer::recipe::so::test::accepts(**m, R"({"key2":1,"key20":2,"other":3})"));
  auto again = c.compile(schema);
  BOOST_TEST_REQUIRE(again.has_value());
  BOOST_TEST(again->get() == m->get());
  BOOST_TEST(c.cached_bytes() > at_compile);
  BOOST_TEST(c.cached_bytes() == compiler::bytes_of(**m));
}

BOOST_AUTO_TEST_SUITE_END()
