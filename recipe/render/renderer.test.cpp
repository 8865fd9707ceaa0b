#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"

#include "recipe/protocol/parse_request.hpp"
#include "recipe/testdata/tokenizers.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::recipe;

namespace {

const special_table& table(template_version v) { return test::real_table(v); }

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
  auto conv = parse_request_json(api_kind::chat, input);
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

BOOST_AUTO_TEST_CASE(dsv32_fixture_encodes_to_the_reference_token_count) {
  // spec fixture README: 1,442 tokens with the V3.2 tokenizer (segment and whole-string encoding agree).
  const auto dir = test::source_dir() + "/recipe/testdata/dsv32_fixture/";
  auto input = nlohmann::ordered_json::parse(test::read_file(dir + "test_input.json"));
  input["model"] = "deepseek";
  input["thinking"] = {{"type", "enabled"}};
  auto segs = render(*parse_request_json(api_kind::chat, input), table(template_version::dsv32));
  const auto ids = test::real_tokenizer(template_version::dsv32).encode(*segs);
  BOOST_TEST(ids.size() == 1442u);
  BOOST_TEST(ids == test::real_tokenizer(template_version::dsv32).encode_with_special_tokens(to_text(*segs)));
}

BOOST_AUTO_TEST_CASE(table_from_tokenizer_file_matches_the_tokenizer) {
  for (auto v : {template_version::dsv32, template_version::dsv41}) {
    auto from_file = special_table::from_tokenizer_json(v, test::tokenizer_path(std::string(to_string(v))));
    BOOST_REQUIRE(from_file.has_value());
    BOOST_TEST(from_file->entries() == table(v).entries());
  }
  // V3.2 and V4.1 disagree on the thinking ids; both come from the files.
  BOOST_TEST(*table(template_version::dsv32).id(spelling::think_open) == 128798);
  BOOST_TEST(*table(template_version::dsv41).id(spelling::think_open) == 128821);
  BOOST_TEST(*table(template_version::dsv41).id(spelling::dsml) == 128825);
}

BOOST_AUTO_TEST_SUITE_END()
