#include "recipe/structured/test_support.hpp"

#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/json_validate.hpp"

#include <boost/test/unit_test.hpp>

#include <thread>

using namespace deepinfer::recipe::so;
using deepinfer::recipe::so::test::accepts;
using deepinfer::recipe::so::test::agrees_with_validator;
using deepinfer::recipe::so::test::schema_matcher;

BOOST_AUTO_TEST_SUITE(structured_json_schema)

// The "other key" lexeme is built on first use; its shortest match, which the grammar's lengths
// need at compile time, is found without building it and must be the built automaton's.
BOOST_AUTO_TEST_CASE(other_key_shortest_is_the_built_automatons) {
  std::vector<std::string> singles{""};
  for (char c = ' '; c <= '~'; ++c)
    if (c != '"' && c != '\\')
      singles.emplace_back(1, c);
  const std::vector<std::vector<std::string>> sets{
      {}, {"a"}, {""}, {"", "a", " "}, {"", "name", "id"}, singles};
  for (const auto& keys : sets) {
    auto unbounded = budget::unbounded();
    const auto built = detail::other_key_dfa(keys, {}, unbounded);
    BOOST_TEST_REQUIRE(!built.empty());
    if (const auto shortest = detail::other_key_shortest(keys))
      BOOST_TEST(*shortest == built.dist(0), keys.size() << " keys");
    else
      BOOST_TEST(keys.size() == singles.size());  // every short key taken: built at compile time
  }
  // And whatever was declared is never another key.
  auto m = schema_matcher(R"({"type":"object","properties":{"":{"type":"integer"},"a":{"type":"integer"}},
      "additionalProperties":{"type":"string"}})");
  BOOST_TEST(accepts(*m, R"({"":1,"b":"x"})"));
  BOOST_TEST(!accepts(*m, R"({"":"x"})"));
  BOOST_TEST(!accepts(*m, R"({"a":"x"})"));
  BOOST_TEST(accepts(*m, R"({"aa":"x"})"));
}

// A bound on whitespace between tokens (the server's default, or 0 for vLLM's
// `disable_any_whitespace`) holds in every gap of every lexeme kind, never inside strings.
BOOST_AUTO_TEST_CASE(whitespace_between_tokens_is_bounded_when_asked) {
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"},
      "tags":{"type":"array","items":{"enum":["a","b"]}},"ok":{"type":"boolean"}},"required":["name"],
      "additionalProperties":{"type":"number"}})";
  const std::string pretty = "{\n    \"name\": \"a  b\",\n    \"n\": 3,\n    \"tags\": [\"a\", \"b\"],\n"
                             "    \"ok\": true,\n    \"x\": 1.5\n}";
  const std::string compact = R"({"name":"a  b","n":3,"tags":["a","b"],"ok":true,"x":1.5})";
  auto any = schema_matcher(schema);
  auto none = schema_matcher(schema, 0u);
  auto five = schema_matcher(schema, 5u), four = schema_matcher(schema, 4u);
  BOOST_TEST(accepts(*any, pretty));
  BOOST_TEST(accepts(*any, "{" + std::string(300, ' ') + compact.substr(1)));
  BOOST_TEST(accepts(*none, compact));
  BOOST_TEST(!accepts(*none, pretty));
  BOOST_TEST(!accepts(*none, R"({"name": "a"})"));
  BOOST_TEST(!accepts(*none, R"( {"name":"a"})"));
  BOOST_TEST(accepts(*none, R"({"name":"  many   spaces  "})"));  // inside a string: text
  BOOST_TEST(accepts(*five, pretty));  // a newline and four spaces in a gap
  BOOST_TEST(!accepts(*four, pretty));
  BOOST_TEST(accepts(*four, compact));
  BOOST_TEST(!accepts(*four, "{\"name\"" + std::string(5, ' ') + ":\"a\"}"));
  BOOST_TEST(accepts(*four, "{\"name\"" + std::string(4, ' ') + ":\"a\"}"));
  // The bound is part of the compiled constraint's identity (cached apart).
  BOOST_TEST(none.get() != any.get());
  BOOST_TEST(schema_matcher(schema, 0u).get() == none.get());
  // JSON mode and an object's "other key" lexeme (built on first use) are bounded too.
  auto object = test::shared_compiler().compile({constraint_kind::json_object, "", 2u});
  BOOST_TEST_REQUIRE(object.has_value());
  BOOST_TEST(accepts(**object, R"({ "k" :  [1, {"z": null}]})"));
  BOOST_TEST(!accepts(**object, R"({"k":   1})"));
  BOOST_TEST(!accepts(**object, "{\"k\":1,\n\n\n\"j\":2}"));
}

// Key unions and "other key" lexemes are built when a mask first needs them, from whichever
// thread gets there first: masks computed from two threads at once on a fresh matcher must
// equal masks computed on another fresh one from one thread, and the compile must not have
// built what the walk did.
BOOST_AUTO_TEST_CASE(lazy_lexers_are_built_once_on_first_use_from_any_thread) {
  std::string props;
  for (int i = 0; i < 40; ++i)
    props += (i ? "," : "") + std::string{"\"p"} + std::to_string(i) + "\":{\"type\":[\"integer\",\"null\"]}";
  const auto schema = R"({"type":"object","properties":{)" + props + R"(},"additionalProperties":{"type":"string"}})";
  const std::string instance = R"({"p3":1,"p17":null,"p39":2,"zz":"x"})";  // declared keys in order, then others
  compiler::config cfg;
  auto fresh = [&] {
    compiler c{vocabulary::of(test::shared_tokenizer()), cfg};
    auto m = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(m.has_value());
    return *m;
  };
  auto walk = [&](const matcher& m) {
    std::vector<token_mask> masks;
    auto st = m.start();
    for (auto id : test::shared_tokenizer().encode(instance)) {
      masks.push_back(m.allowed_tokens(st));
      BOOST_REQUIRE(m.advance(st, id));
    }
    masks.push_back(m.allowed_tokens(st));
    BOOST_TEST(m.is_accepting(st));
    return masks;
  };
  const auto reference = fresh();
  const auto before = compiler::bytes_of(*reference);
  const auto expected = walk(*reference);
  BOOST_TEST(compiler::bytes_of(*reference) > before);  // the walk built what it entered
  const auto shared = fresh();
  std::vector<token_mask> a, b;
  std::thread t1{[&] { a = walk(*shared); }}, t2{[&] { b = walk(*shared); }};
  t1.join();
  t2.join();
  BOOST_TEST((a == expected));
  BOOST_TEST((b == expected));
}

BOOST_AUTO_TEST_CASE(objects_accept_valid_instances_and_reject_invalid_ones) {
  auto m = schema_matcher(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
    "tags":{"type":"array","items":{"type":"string"},"maxItems":2}},"required":["name"],"additionalProperties":false})");
  BOOST_TEST(accepts(*m, R"({"name":"Ada"})"));
  BOOST_TEST(accepts(*m, R"({"name":"Ada","age":36,"tags":["x","y"]})"));
  BOOST_TEST(accepts(*m, "{ \"name\" : \"Ada\" ,\n \"age\": 150 }"));  // whitespace is flexible
  BOOST_TEST(!accepts(*m, R"({"age":36})"));                          // required
  BOOST_TEST(!accepts(*m, R"({"name":"Ada","age":151})"));            // maximum
  BOOST_TEST(!accepts(*m, R"({"name":"Ada","age":-1})"));             // minimum
  BOOST_TEST(!accepts(*m, R"({"name":"Ada","age":3.5})"));            // integer
  BOOST_TEST(!accepts(*m, R"({"name":"Ada","tags":["x","y","z"]})")); // maxItems
  BOOST_TEST(!accepts(*m, R"({"name":"Ada","extra":1})"));            // additionalProperties
  BOOST_TEST(!accepts(*m, R"({"name":"Ada"} )"));                     // nothing after the value
  BOOST_TEST(!accepts(*m, R"({"name":"Ada")"));                       // incomplete
}

// JSON mode (`response_format: json_object`) promises an object: the root may not be a bare
// scalar or array, while any keys and values inside are fine.
BOOST_AUTO_TEST_CASE(json_object_mode_accepts_any_object_and_nothing_else) {
  auto m = deepinfer::recipe::so::test::shared_compiler().compile({constraint_kind::json_object, ""});
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(accepts(**m, R"({})"));
  BOOST_TEST(accepts(**m, R"({"a": [1, {"b": null}], "c": "x"})"));
  for (const auto* not_an_object : {"358", R"("text")", "[1]", "true", "null"})
    BOOST_TEST(!accepts(**m, not_an_object), not_an_object);
}

BOOST_AUTO_TEST_CASE(additional_properties_never_shadow_declared_keys) {
  auto m = schema_matcher(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  BOOST_TEST(accepts(*m, R"({"a":1,"b":"x"})"));
  BOOST_TEST(!accepts(*m, R"({"a":"x"})"));
  BOOST_TEST(!accepts(*m, R"({"b":2})"));
}

BOOST_AUTO_TEST_CASE(min_and_max_properties_count_every_member) {
  auto m = schema_matcher(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "minProperties":1,"maxProperties":2})");
  BOOST_TEST(!accepts(*m, "{}"));
  BOOST_TEST(accepts(*m, R"({"b":1})"));
  BOOST_TEST(accepts(*m, R"({"a":1,"zz":true})"));      // additional members count too
  BOOST_TEST(!accepts(*m, R"({"a":1,"b":2,"c":3})"));
  // Additional keys may repeat and a JSON object keeps one of a repeated key: toward
  // minProperties they count as one (a repeated free key once made `{"x":1,"x":2}` pass for two).
  auto open = schema_matcher(R"({"type":"object","minProperties":1})");
  BOOST_TEST(!accepts(*open, "{}"));
  BOOST_TEST(accepts(*open, R"({"x":1,"y":2,"x":3})"));
  auto two = schema_matcher(R"({"type":"object","properties":{"a":{}},"patternProperties":{"^p":{}},"minProperties":2})");
  BOOST_TEST(accepts(*two, R"({"a":1,"x":2})"));
  BOOST_TEST(accepts(*two, R"({"a":1,"p1":2,"p1":3})"));
  BOOST_TEST(!accepts(*two, R"({"x":1,"x":2})"));
  BOOST_TEST(!accepts(*two, R"({"p1":1,"p1":2})"));
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto refused = c.compile({constraint_kind::json_schema, R"({"type":"object","minProperties":3})"});
  BOOST_TEST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().find("minProperties 3 needs 3 keys beyond the declared") != std::string::npos, refused.error());
  auto none = schema_matcher(R"({"type":"object","maxProperties":0})");
  BOOST_TEST(accepts(*none, "{}"));
  BOOST_TEST(!accepts(*none, R"({"x":1})"));
}

BOOST_AUTO_TEST_CASE(unions_enums_consts_and_combinators) {
  auto m = schema_matcher(R"({"anyOf":[{"type":["string","null"]},{"enum":[1,"two",[3]]}]})");
  BOOST_TEST(accepts(*m, R"("x")"));
  BOOST_TEST(accepts(*m, "null"));
  BOOST_TEST(accepts(*m, "1"));
  BOOST_TEST(accepts(*m, "[3]"));
  BOOST_TEST(!accepts(*m, "2"));
  auto c = schema_matcher(R"({"const":{"k":true}})");
  BOOST_TEST(accepts(*c, R"({"k":true})"));
  BOOST_TEST(!accepts(*c, R"({"k":false})"));
  auto all = schema_matcher(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
    {"properties":{"b":{"type":"boolean"}},"required":["b"]}]})");
  BOOST_TEST(accepts(*all, R"({"a":1,"b":true})"));
  BOOST_TEST(!accepts(*all, R"({"a":1})"));
  auto one = schema_matcher(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})");
  BOOST_TEST(accepts(*one, "12"));
  BOOST_TEST(!accepts(*one, "true"));
}

BOOST_AUTO_TEST_CASE(recursive_refs_and_defs) {
  auto m = schema_matcher(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
    "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"})");
  BOOST_TEST(accepts(*m, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]})"));
  BOOST_TEST(!accepts(*m, R"({"v":1,"kids":[{"w":2}]})"));
}

// Plain-name fragments (`$anchor`, or `$id` / draft 4's `id` of the form "#name") and references
// through the root's own `$id`; a name nothing defines, or another document, is an error.
BOOST_AUTO_TEST_CASE(refs_by_anchor_and_through_the_roots_own_id) {
  agrees_with_validator(R"({"$id":"https://x.test/s.json","type":"object","properties":{
      "a":{"$ref":"#pos"},"b":{"$ref":"https://x.test/s.json#/$defs/word"},"c":{"$ref":"#old"},"d":{"$ref":"#new"}},
      "additionalProperties":false,
      "$defs":{"p":{"$id":"#pos","type":"integer","minimum":0},"word":{"type":"string","maxLength":3},
               "o":{"id":"#old","type":"boolean"},"n":{"$anchor":"new","enum":["x","y"]}}})",
                        {"{}", R"({"a":3})", R"({"a":-1})", R"({"b":"abc"})", R"({"b":"abcd"})", R"({"c":true})",
                         R"({"c":1})", R"({"d":"y"})", R"({"d":"z"})"});
  BOOST_TEST(!accepts(*schema_matcher(R"({"$defs":{"p":{"$id":"#pos","type":"integer"}},"$ref":"#pos"})"), "\"s\""));
  // The whole root by its URI, recursively.
  auto tree = schema_matcher(R"({"$id":"urn:t#","type":"object","properties":{"k":{"$ref":"urn:t"}},"additionalProperties":false})");
  BOOST_TEST(accepts(*tree, R"({"k":{"k":{}}})"));
  BOOST_TEST(!accepts(*tree, R"({"k":1})"));
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (auto [schema, word] : {std::pair{R"({"$ref":"#nowhere"})", "no $anchor"},
                              {R"({"$id":"https://x.test/s.json","$ref":"https://x.test/other.json#/a"})", "not local"},
                              // An anchor-like string among data (enum values) names no schema.
                              {R"({"enum":[{"$anchor":"e"}],"$ref":"#e"})", "no $anchor"}}) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    BOOST_TEST(r.error().find(word) != std::string::npos, r.error());
  }
}

BOOST_AUTO_TEST_CASE(strings_lengths_patterns_and_formats) {
  // Past 4096 characters a maximum is written as 4096 (valid either way); a minimum is refused.
  auto text = schema_matcher(R"({"type":"string","maxLength":65535})");
  BOOST_TEST(accepts(*text, "\"" + std::string(4096, 'a') + "\""));
  BOOST_TEST(!accepts(*text, "\"" + std::string(4097, 'a') + "\""));
  auto& comp = deepinfer::recipe::so::test::shared_compiler();
  auto too_long = comp.compile({constraint_kind::json_schema, R"({"type":"string","minLength":5000})"});
  BOOST_TEST_REQUIRE(!too_long.has_value());
  BOOST_TEST(too_long.error().find("minLength") != std::string::npos);
  auto len = schema_matcher(R"({"type":"string","minLength":2,"maxLength":4})");
  BOOST_TEST(accepts(*len, R"("ab")"));
  BOOST_TEST(accepts(*len, R"("é\n")"));  // characters, not bytes: an escape is one
  BOOST_TEST(!accepts(*len, R"("a")"));
  BOOST_TEST(!accepts(*len, R"("abcde")"));
  auto pat = schema_matcher(R"({"type":"string","pattern":"^[a-z]+-\\d{2}$"})");
  BOOST_TEST(accepts(*pat, R"("abc-12")"));
  BOOST_TEST(!accepts(*pat, R"("abc-1")"));
  auto search = schema_matcher(R"({"type":"string","pattern":"x"})");  // unanchored: anywhere
  BOOST_TEST(accepts(*search, R"("axb")"));
  BOOST_TEST(!accepts(*search, R"("ab")"));
  for (auto [fmt, good, bad] : {std::tuple{"date", "2024-02-29", "2024-13-01"}, {"time", "12:30:00Z", "25:00:00Z"},
                                {"date-time", "2024-01-02T03:04:05.6+01:00", "2024-01-02 03:04:05"},
                                {"uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"},
                                {"email", "a.b@example.com", "no-at-sign"}, {"uri", "https://x.org/a?b=c", "not a uri"},
                                {"ipv4", "192.168.0.255", "256.1.1.1"},
                                {"duration", "P1Y2M3DT4H5M6S", "P1H"}, {"duration", "PT36H", "P"}, {"duration", "P4W", "PT"},
                                {"ipv6", "2001:db8::8a2e:370:7334", "2001:db8:::1"}, {"ipv6", "::1", "1:2:3:4:5:6:7:8:9"},
                                {"uri-reference", "../a/b?c#d", "a b"}, {"uri-reference", "https://x.org/%20", ":x"},
                                {"iri", "https://x.org/a", "/relative"}, {"idn-hostname", "example.com", "-bad-.com"},
                                {"json-pointer", "/a~1b/0", "a/b"}, {"relative-json-pointer", "0#", "/a"},
                                {"byte", "aGVsbG8=", "aGVsbG8"}, {"password", "any \\\"thing\\\"", "a\"b"},
                                // 29 February in leap years only; a leap second only at 23:59:60 UTC.
                                {"date", "2000-02-29", "1900-02-29"}, {"date", "2024-02-29", "2023-02-29"},
                                {"time", "23:59:60Z", "22:59:60Z"}, {"date-time", "2016-12-31T23:59:60+00:00", "2016-12-31T23:59:60+01:00"},
                                // Dot-atoms; RFC 3986 characters, `%` escapes and ports; no A-label (xn--).
                                {"email", "a.b+c@example.com", "a..b@example.com"}, {"email", "x@y.z", ".x@y.z"},
                                {"uri", "urn:isbn:0451450523", "http://x.org/%zz"}, {"uri", "mailto:a@b.c", "http://x.org:80a/"},
                                {"uri", "http://[::1]:8080/a", "http://x.org/\u00fc"}, {"iri", "http://x.org/\u00fc", "http://x.org/a b"},
                                {"uri-reference", "//h/p?q", "//a@b@h/"}, {"hostname", "a--b.example.com", "xn--nxasmq6b.com"}}) {
    auto f = schema_matcher(std::string{R"({"type":"string","format":")"} + fmt + "\"}");
    BOOST_TEST(accepts(*f, std::string{"\""} + good + "\""), fmt);
    BOOST_TEST(!accepts(*f, std::string{"\""} + bad + "\""), fmt);
  }
  // A host name is at most 253 characters, however its labels (63 at most each) are cut.
  const auto host_name = [](std::size_t last_label) {
    return "\"" + std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
           std::string(last_label, 'd') + "\"";
  };
  for (const char* fmt : {"hostname", "idn-hostname"}) {
    auto host = schema_matcher(std::string{R"({"type":"string","format":")"} + fmt + "\"}");
    BOOST_TEST(accepts(*host, host_name(61)), fmt);   // 253 characters
    BOOST_TEST(!accepts(*host, host_name(62)), fmt);  // 254
  }
}

// A format or pattern under a long maxLength whose product would pass the automaton cap is
// written to fewer characters (never under 256; outputs stay valid), not refused; a cut below
// that is still refused.
BOOST_AUTO_TEST_CASE(a_long_count_under_a_pattern_is_shortened_not_refused) {
  auto m = schema_matcher(R"({"type":"string","format":"email","maxLength":1024})");
  BOOST_TEST(accepts(*m, R"("a.b@example.com")"));
  // 237 characters (a local part is at most 64, RFC 5321; labels at most 63).
  const auto domain = [](int labels) {
    std::string d;
    for (int i = 0; i < labels; ++i)
      d += std::string(60, static_cast<char>('b' + i % 20)) + ".";
    return d + "com";
  };
  BOOST_TEST(accepts(*m, "\"" + std::string(60, 'a') + "@" + domain(3) + "\""));
  BOOST_TEST(!accepts(*m, "\"" + std::string(65, 'a') + "@example.com\""));
  BOOST_TEST(!accepts(*m, R"("no at sign")"));
  BOOST_TEST(!accepts(*m, "\"" + std::string(60, 'a') + "@" + domain(17) + "\""));  // over the schema's own bound
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto words = c.compile({constraint_kind::json_schema, R"({"type":"string","maxLength":5000,"pattern":"^(?:\\S+\\s+){0,99}\\S+$"})"});
  BOOST_TEST_REQUIRE(!words.has_value());
  BOOST_TEST(words.error().find("automaton too large") != std::string::npos, words.error());
}

// An enum or const beside any other keyword is the listed values that pass the whole schema:
// keywords the lexemes cannot express (not, if/then/else, uniqueItems, dependencies) are exact
// for a finite set, and so are pattern and format beside an enum (refused before).
BOOST_AUTO_TEST_CASE(enum_values_are_filtered_by_the_whole_schema) {
  struct case_t {
    const char* schema;
    std::vector<const char*> in, out;
  };
  const std::vector<case_t> cases{
      {R"({"allOf":[{"enum":[[1,2],[1,1],[3]]},{"not":{"uniqueItems":true}}]})", {"[1,1]"}, {"[1,2]", "[3]"}},
      {R"({"allOf":[{"enum":[null,0,"x"]},{"not":{"not":{"enum":[null]}}}]})", {"null"}, {"0", "\"x\""}},
      {R"({"enum":["ab","ba","bb"],"pattern":"^b","not":{"const":"bb"}})", {"\"ba\""}, {"\"ab\"", "\"bb\""}},
      {R"({"enum":["2024-02-30","2024-02-29","x"],"format":"date"})", {"\"2024-02-29\""}, {"\"2024-02-30\"", "\"x\""}},
      {R"({"enum":[{"a":1},{"a":1,"b":2},{"c":3}],"dependentRequired":{"a":["b"]},"if":{"required":["c"]},"then":false})",
       {R"({"a":1,"b":2})"}, {R"({"a":1})", R"({"c":3})"}},
      {R"({"const":5,"multipleOf":2})", {}, {"5"}},
      {R"({"enum":[1,2.5,"3"],"type":"integer"})", {"1"}, {"2.5", "\"3\""}},
      {R"({"properties":{"k":{"enum":["on","off"],"not":{"$ref":"#/$defs/off"}}},"required":["k"],"$defs":{"off":{"const":"off"}}})",
       {R"({"k":"on"})"}, {R"({"k":"off"})"}},
  };
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (const auto& t : cases) {
    auto m = c.compile({constraint_kind::json_schema, t.schema});
    if (t.in.empty()) {  // nothing passes: a contradiction, refused as such
      BOOST_TEST_REQUIRE(!m.has_value(), t.schema);
      BOOST_TEST(m.error().find("admits no value") != std::string::npos, m.error());
      continue;
    }
    BOOST_TEST_REQUIRE(m.has_value(), t.schema << ": " << (m ? "" : m.error()));
    for (auto x : t.in)
      BOOST_TEST(accepts(**m, x), t.schema << " " << x);
    for (auto x : t.out)
      BOOST_TEST(!accepts(**m, x), t.schema << " " << x);
  }
}

// The narrowing flattens allOf and $ref to compare branches; a part that is `false`, or two that
// contradict each other, leave nothing, never an internal error (MaskBench: 17 schemas answered
// "cannot use key() for non-object iterators").
BOOST_AUTO_TEST_CASE(narrowing_through_false_or_contradictory_parts) {
  // An `if` alone keeps a subset of what is valid (its `else` part is not narrowed apart from
  // it here): what it accepts is valid.
  const std::string ifs =
      R"({"type":"object","properties":{"C":{"type":"array","items":{"allOf":[{"if":{"properties":{"A":{"const":"L"}}}},{"if":{"properties":{"A":{"const":"E"}}}},{"if":{"properties":{"A":{"const":"D"}}}},{"if":{}}],"required":["A"]}}}})";
  auto m = schema_matcher(ifs);
  auto root = nlohmann::ordered_json::parse(ifs);
  auto b = budget::unbounded();
  json_validator check{root, b};
  for (const auto* text : {R"({"C":[{"A":"L"}]})", R"({"C":[{}]})", R"({"C":[{"A":1},{"A":"E"}]})", "{}", R"({"C":[1]})"})
    BOOST_TEST((!accepts(*m, text) || check.valid(nlohmann::ordered_json::parse(text), root)), text);
  BOOST_TEST(accepts(*m, R"({"C":[{"A":"L"}]})"));
  BOOST_TEST(!accepts(*m, R"({"C":[{}]})"));
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases{
      {R"({"oneOf":[{"type":"string"},{"allOf":[{"type":"string"},false]}]})", {R"("x")", "1"}},
      {R"({"oneOf":[{"type":"integer"},{"allOf":[{"type":"string"},{"type":"integer"}]}]})", {"1", R"("x")"}},
  };
  for (const auto& [schema, instances] : cases)
    agrees_with_validator(schema, instances);
}

// propertyNames: declared keys it rejects are absent; the other keys are a listed set or the
// keys one pattern finds (declared keys keep their own schema), through $ref; exact.
BOOST_AUTO_TEST_CASE(property_names_as_listed_keys_or_one_pattern) {
  const std::vector<std::pair<std::string, std::vector<const char*>>> cases{
      {R"({"type":"object","propertyNames":{"pattern":"^[a-z]+$"},"additionalProperties":{"type":"integer"}})",
       {"{}", R"({"ab":1})", R"({"Ab":1})", R"({"ab":"x"})", R"({"a1":2})", R"({"ab":1,"cd":2})"}},
      {R"({"type":"object","properties":{"ID":{"type":"string"}},"propertyNames":{"pattern":"^[a-z]+$"}})",
       {"{}", R"({"ID":"x"})", R"({"ab":1})"}},
      {R"({"type":"object","properties":{"id":{"type":"string"}},"propertyNames":{"pattern":"^[a-z]+$"},"additionalProperties":{"type":"boolean"}})",
       {R"({"id":"x"})", R"({"id":"x","ok":true})", R"({"id":1})", R"({"ok":1})", R"({"OK":true})"}},
      {R"({"type":"object","propertyNames":{"enum":["a","b"]},"additionalProperties":{"type":"integer"}})",
       {R"({"a":1})", R"({"a":1,"b":2})", R"({"c":1})", R"({"a":"x"})"}},
      {R"({"definitions":{"k":{"type":"string","pattern":"^x"}},"type":"object","propertyNames":{"$ref":"#/definitions/k"}})",
       {R"({"xa":1})", R"({"ya":1})", "{}"}},
      {R"({"type":"object","propertyNames":false,"properties":{"a":{}}})", {"{}", R"({"a":1})"}},
      {R"({"type":"object","propertyNames":{"type":"string"},"required":["q"]})", {R"({"q":1})", "{}"}},
  };
  for (const auto& [schema, instances] : cases)
    agrees_with_validator(schema, instances);
  BOOST_TEST(!accepts(*schema_matcher(cases[0].first), R"({"Ab":1})"));  // the comparison is not vacuous
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (auto [schema, word] : {std::pair{R"({"type":"object","propertyNames":{"maxLength":3}})", "maxLength"},
                              {R"({"type":"object","propertyNames":{"pattern":"a"},"patternProperties":{"b":{}}})", "patternProperties"},
                              {R"({"allOf":[{"propertyNames":{"pattern":"a"}},{"propertyNames":{"pattern":"b"}}]})", "propertyNames"}}) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    BOOST_TEST(r.error().find(word) != std::string::npos, r.error());
  }
}

// A keyword whose value has the wrong JSON type is an error that names it and where it is (a
// mutation fuzz of MaskBench's schemas found 229 in 4,000 answered with an exception's text
// instead), cut at a character boundary so the message stays valid UTF-8 in a JSON error body.
BOOST_AUTO_TEST_CASE(malformed_keywords_are_named_with_their_place) {
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (auto [schema, words] : {
           std::pair{R"({"type":3})", std::vector<std::string>{"'type' must be a type name", "the root"}},
           {R"({"properties":{"a":{"type":[[]]}}})", {"'type'", "/properties/a"}},
           {R"({"properties":{"a":{"required":"b"}}})", {"'required' must be an array of strings", "/properties/a"}},
           {R"({"properties":{"a":{},"b":[true]}})", {"'properties' must be an object whose values are schemas", "/properties/b"}},
           {R"({"anyOf":[{},1.5]})", {"'anyOf' must be an array of schemas", "/anyOf/1"}},
           {R"({"$defs":{"x":{"items":"^a$"}},"$ref":"#/$defs/x"})", {"'items'", "/$defs/x"}},
           {R"({"properties":{"a/b~c":{"$ref":null}}})", {"'$ref' must be a string", "/properties/a~1b~0c"}},
           {R"({"items":{"maxItems":[{}]}})", {"'maxItems' must be a number", "/items"}},
           {R"({"dependencies":{"a":3}})", {"'dependencies'", "/dependencies/a"}},
           {R"(5)", {"a schema must be an object or a boolean"}},
           // A $ref's target is checked wherever it sits.
           {R"({"components":{"x":{"prefixItems":{}}},"$ref":"#/components/x"})", {"'prefixItems'", "/components/x"}},
       }) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    for (const auto& w : words)
      BOOST_TEST(r.error().find(w) != std::string::npos, r.error() << " lacks " << w);
    BOOST_TEST(r.error().find("exception") == std::string::npos, r.error());
  }
  // A long value of multi-byte characters, cut: still valid UTF-8.
  std::string long_enum = R"({"enum":")";
  for (int i = 0; i < 50; ++i)
    long_enum += "\u00e9";
  long_enum += R"("})";
  auto r = c.compile({constraint_kind::json_schema, long_enum});
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("...") != std::string::npos, r.error());
  BOOST_CHECK_NO_THROW((void)nlohmann::json(r.error()).dump());
  // Tool parameters are checked the same way.
  auto t = c.compile({constraint_kind::tool_calls, R"({"tools":[{"name":"f","parameters":{"type":"object","properties":{"x":{"minimum":"0"}}}}]})"});
  BOOST_TEST_REQUIRE(!t.has_value());
  BOOST_TEST(t.error().find("'minimum' must be a number: at /properties/x") != std::string::npos, t.error());
}

BOOST_AUTO_TEST_CASE(unsupported_keywords_are_errors_never_ignored) {
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  for (auto [schema, word] : {std::pair{R"({"not":{"uniqueItems":true}})", "not"},
                              {R"({"allOf":[{"patternProperties":{"^a":{}}},{"properties":{"x":{}},"additionalProperties":false}]})", "patternProperties"},
                              {R"({"type":"array","uniqueItems":true})", "uniqueItems"},
                              {R"({"$ref":"other.json#/x"})", "not local"},
                              {R"({"$defs":{"a":{}},"$ref":"#/$defs/a%zz"})", "does not resolve"},
                              {R"({"$defs":{"a":{}},"$ref":"#/$defs/a%2"})", "does not resolve"},
                              {R"({"type":"string","pattern":"(?=a)b"})", "lookaround"}}) {
    auto r = c.compile({constraint_kind::json_schema, schema});
    BOOST_TEST_REQUIRE(!r.has_value(), schema);
    BOOST_TEST(r.error().find(word) != std::string::npos, r.error());
  }
  // Known-harmless forms are fine.
  BOOST_TEST(c.compile({constraint_kind::json_schema, R"({"type":"array","uniqueItems":false,"x-custom":1})"}).has_value());
}

BOOST_AUTO_TEST_CASE(decidable_not_forms) {
  auto m = schema_matcher(R"({"type":["string","integer","null"],"not":{"type":"null"}})");
  BOOST_TEST(accepts(*m, "3"));
  BOOST_TEST(!accepts(*m, "null"));
  auto i = schema_matcher(R"({"type":"integer"})");
  BOOST_TEST(!accepts(*i, "3.0"));  // strict: an integer has no fraction
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  auto never = c.compile({constraint_kind::json_schema, R"({"not":{}})"});
  BOOST_TEST_REQUIRE(!never.has_value());
  BOOST_TEST(never.error().find("admits no value") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(compile_timeout_is_an_error) {
  compiler::config cfg;
  cfg.timeout = std::chrono::microseconds{1};
  compiler c{vocabulary::of(deepinfer::recipe::so::test::shared_tokenizer()), cfg};
  auto r = c.compile({constraint_kind::json_schema, R"({"type":"string","minLength":100,"maxLength":3000,"pattern":"^[a-z ]+$"})"});
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error() == "compile timeout");
}

// \u escapes in a free string: any code point, a surrogate only in a high-low pair (strict
// parsers refuse a lone one). (Keys and constrained strings take one spelling, no escapes.)
BOOST_AUTO_TEST_CASE(escapes_never_spell_a_lone_surrogate) {
  for (const char* schema : {R"({"type":"string"})", R"({"type":"array","items":{"type":"string"}})"}) {
    auto m = schema_matcher(schema);
    const bool array = std::string{schema}.find("array") != std::string::npos;
    auto wrap = [&](const std::string& s) { return array ? "[" + s + "]" : s; };
    BOOST_TEST(accepts(*m, wrap(R"("\u00e9\u4E2D")")), schema);
    BOOST_TEST(accepts(*m, wrap(R"("\ud83d\ude00")")), schema);  // U+1F600, as a pair
    BOOST_TEST(accepts(*m, wrap(R"("\uD7FF\uE000")")), schema);  // just outside the surrogates
    BOOST_TEST(!accepts(*m, wrap(R"("\ud83d")")), schema);
    BOOST_TEST(!accepts(*m, wrap(R"("\ude00\ud83d")")), schema);
    BOOST_TEST(!accepts(*m, wrap(R"("\uDBFFx")")), schema);
  }
}

BOOST_AUTO_TEST_SUITE_END()
