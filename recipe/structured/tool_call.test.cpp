// Forced tool calls: the grammar accepts exactly the DSML markup of calls to the allowed tools
// with arguments by their schemas (spec deepseek-format.md §3.1, §7), in V4.1 and V3.2 spellings.
#include "recipe/structured/test_support.hpp"
#include "recipe/structured/token_trie.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe::so;

namespace {

const std::string M{dsml_spelling};

/// Whether `text` passes every mask and ends accepting, tokenized as the model would emit it:
/// each `M` as the `｜DSML｜` special token, the text between by the tokenizer.
bool accepts(const matcher& m, const std::string& text) {
  const auto& tok = test::shared_tokenizer();
  std::vector<deepinfer::recipe::token_id> ids;
  for (std::size_t at = 0;;) {
    const auto next = text.find(M, at);
    for (auto id : tok.encode(text.substr(at, next == std::string::npos ? std::string::npos : next - at)))
      ids.push_back(id);
    if (next == std::string::npos)
      break;
    ids.push_back(*tok.special_id("｜DSML｜"));
    at = next + M.size();
  }
  auto st = m.start();
  for (auto id : ids) {
    if (!mask_test(m.allowed_tokens(st), id))
      return false;
    if (!m.advance(st, id))
      throw std::runtime_error("mask allowed a token advance refused");
  }
  return mask_test(m.allowed_tokens(st), m.vocab().eos()) && m.is_accepting(st);
}

std::string spec(bool parallel, bool v41, bool both = true) {
  std::string tools = R"([{"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}, "units": {"enum": ["c", "f"]}}, "required": ["city", "days"]}})";
  if (both)
    tools += R"(, {"name": "noop", "parameters": {"type": "object", "properties": {}}})";
  return R"({"tools": )" + tools + "], \"parallel\": " + (parallel ? "true" : "false") + ", \"v41\": " + (v41 ? "true" : "false") + "}";
}

std::string call(const std::string& m, const std::string& body) { return "\n\n<" + m + " calls>\n" + body + "\n</" + m + " calls>"; }

std::string weather(const std::string& m, const std::string& city, const std::string& days) {
  return "<" + m + " invoke name=\"get_weather\">\n<" + m + " parameter name=\"city\" string=\"true\">" + city + "</" + m +
         " parameter>\n<" + m + " parameter name=\"days\" string=\"false\">" + days + "</" + m + " parameter>\n</" + m + " invoke>";
}

} // namespace

BOOST_AUTO_TEST_SUITE(tool_call_grammar)

BOOST_AUTO_TEST_CASE(v41_calls_with_arguments_by_schema) {
  auto m = test::shared_compiler().compile({constraint_kind::tool_calls, spec(false, true)});
  BOOST_TEST_REQUIRE(m.has_value(), (m ? std::string{} : m.error()));
  BOOST_TEST(accepts(**m, call(M, weather(M, "Paris, \"old\" town\nnorth", "2"))));
  BOOST_TEST(accepts(**m, call(M, weather(M, "", "7"))));                         // an empty string
  BOOST_TEST(accepts(**m, call(M, "<" + M + " invoke name=\"noop\">\n\n</" + M + " invoke>"))); // no parameters
  BOOST_TEST(!accepts(**m, call(M, weather(M, "Paris", "8"))));                   // days > maximum
  BOOST_TEST(!accepts(**m, call(M, weather(M, "Paris", "\"2\""))));               // not an integer
  BOOST_TEST(!accepts(**m, call(M, "<" + M + " invoke name=\"other\">\n\n</" + M + " invoke>"))); // undeclared tool
  BOOST_TEST(!accepts(**m, call(M, "<" + M + " invoke name=\"get_weather\">\n</" + M + " invoke>"))); // required missing
  BOOST_TEST(!accepts(**m, call("｜DSML｜", weather("｜DSML｜", "Paris", "2")))); // the marker spelled as text
  // One call only without parallel; with it, several joined by a newline.
  BOOST_TEST(!accepts(**m, call(M, weather(M, "A", "1") + "\n" + weather(M, "B", "2"))));
  auto par = test::shared_compiler().compile({constraint_kind::tool_calls, spec(true, true)});
  BOOST_TEST_REQUIRE(par.has_value());
  BOOST_TEST(accepts(**par, call(M, weather(M, "A", "1") + "\n" + weather(M, "B", "2"))));
  // Compact JSON arguments (no whitespace between JSON tokens): the markup's newlines and a raw
  // string's text are not JSON whitespace and stay as they are.
  auto compact = test::shared_compiler().compile({constraint_kind::tool_calls, spec(false, true), 0u});
  BOOST_TEST_REQUIRE(compact.has_value());
  BOOST_TEST(accepts(**compact, call(M, weather(M, "Paris,  \n old town", "2"))));
  BOOST_TEST(!accepts(**compact, call(M, weather(M, "Paris", " 2"))));
  BOOST_TEST(accepts(**m, call(M, weather(M, "Paris", " 2"))));
}

BOOST_AUTO_TEST_CASE(a_string_with_bounds_a_pattern_or_a_format_is_a_json_string_that_enforces_them) {
  auto m = test::shared_compiler().compile({constraint_kind::tool_calls, R"({"tools": [{"name": "book", "parameters":
      {"type": "object", "properties": {"code": {"type": "string", "maxLength": 3, "pattern": "^[A-Z]+$"},
       "day": {"type": "string", "format": "date"}}, "required": ["code", "day"]}}], "v41": true})"});
  BOOST_TEST_REQUIRE(m.has_value(), (m ? std::string{} : m.error()));
  auto book = [](const std::string& code, const std::string& day, const std::string& kind = "false") {
    return call(M, "<" + M + " invoke name=\"book\">\n<" + M + " parameter name=\"code\" string=\"" + kind + "\">" + code +
                     "</" + M + " parameter>\n<" + M + " parameter name=\"day\" string=\"" + kind + "\">" + day + "</" + M +
                     " parameter>\n</" + M + " invoke>");
  };
  BOOST_TEST(accepts(**m, book("\"ABC\"", "\"2026-12-02\"")));
  BOOST_TEST(!accepts(**m, book("\"ABCD\"", "\"2026-12-02\"")));      // over maxLength
  BOOST_TEST(!accepts(**m, book("\"abc\"", "\"2026-12-02\"")));       // off the pattern
  BOOST_TEST(!accepts(**m, book("\"AB\"", "\"tomorrow\"")));          // not a date
  BOOST_TEST(!accepts(**m, book("ABC", "2026-12-02", "true")));       // raw text would check none of it
}

BOOST_AUTO_TEST_CASE(v32_spelling_and_several_tools_with_refs_are_refused) {
  auto m = test::shared_compiler().compile({constraint_kind::tool_calls, spec(false, false)});
  BOOST_TEST_REQUIRE(m.has_value(), (m ? std::string{} : m.error()));
  const std::string d = "｜DSML｜";
  const std::string v32 = "\n\n<" + d + "function_calls>\n<" + d + "invoke name=\"get_weather\">\n<" + d +
                          "parameter name=\"city\" string=\"true\">Rome</" + d + "parameter>\n<" + d +
                          "parameter name=\"days\" string=\"false\">3</" + d + "parameter>\n</" + d + "invoke>\n</" + d +
                          "function_calls>";
  BOOST_TEST(accepts(**m, v32));
  auto refs = test::shared_compiler().compile({constraint_kind::tool_calls, R"({"tools": [
      {"name": "a", "parameters": {"$defs": {"x": {"type": "integer"}}, "type": "object", "properties": {"v": {"$ref": "#/$defs/x"}}}},
      {"name": "b", "parameters": {"type": "object", "properties": {}}}]})"});
  BOOST_TEST_REQUIRE(!refs.has_value());
  BOOST_TEST(refs.error().find("$ref") != std::string::npos, refs.error());
  auto one = test::shared_compiler().compile({constraint_kind::tool_calls, R"({"tools": [
      {"name": "a", "parameters": {"$defs": {"x": {"type": "integer"}}, "type": "object", "properties": {"v": {"$ref": "#/$defs/x"}},
       "required": ["v"]}}]})"});
  BOOST_TEST_REQUIRE(one.has_value(), (one ? std::string{} : one.error()));
  BOOST_TEST(accepts(**one, call(M, "<" + M + " invoke name=\"a\">\n<" + M + " parameter name=\"v\" string=\"false\">12</" + M +
                                 " parameter>\n</" + M + " invoke>")));
}

BOOST_AUTO_TEST_SUITE_END()
