#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"

#include "recipe/protocol/chat_request.hpp"
#include "recipe/testdata/paths.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe;

namespace {

const special_table& table(template_version v) {
  static auto t32 = special_table::from_tokenizer_json(template_version::dsv32, test::tokenizer_path("dsv32"));
  static auto t41 = special_table::from_tokenizer_json(template_version::dsv41, test::tokenizer_path("dsv41"));
  auto& t = v == template_version::dsv32 ? t32 : t41;
  BOOST_REQUIRE_MESSAGE(t.has_value(), "tokenizer assets missing; run scripts/bootstrap.sh");
  return *t;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  std::size_t a = 0;
  while (a < s.size() && (s[a] == '\n' || s[a] == ' '))
    ++a;
  return s.substr(a);
}

} // namespace

BOOST_AUTO_TEST_SUITE(renderer)

BOOST_AUTO_TEST_CASE(dsv32_fixture_renders_byte_for_byte) {
  const auto dir = test::source_dir() + "/recipe/testdata/dsv32_fixture/";
  auto input = nlohmann::ordered_json::parse(test::read_file(dir + "test_input.json"));
  // The official test: tools on messages[0] (our parser attaches request tools to the first system
  // message), thinking mode, BOS on.
  input["model"] = "deepseek";
  input["thinking"] = {{"type", "enabled"}};
  auto conv = parse_chat_request_json(input);
  BOOST_REQUIRE_MESSAGE(conv.has_value(), (conv.has_value() ? "" : conv.error().body()));
  auto segs = render(*conv, table(template_version::dsv32));
  BOOST_REQUIRE(segs.has_value());
  const auto want = trim(test::read_file(dir + "test_output.txt"));
  const auto got = to_text(*segs);
  BOOST_TEST(got.size() == want.size());
  BOOST_TEST(got == want);
  // Special segments carry the V3.2 ids from the tokenizer file: BOS first, EOS last, and
  // `<think>` is 128798 (V4.1 puts it at 128821).
  BOOST_TEST(segs->front().special_id.value_or(-1) == 0);
  BOOST_TEST(segs->back().special_id.value_or(-1) == 1);
  bool think = false;
  for (const auto& s : *segs)
    think = think || (s.text == "<think>" && s.special_id == 128798);
  BOOST_TEST(think);
}

BOOST_AUTO_TEST_SUITE_END()
