// Golden prompts: every request under recipe/testdata/golden/<api>/ renders to the checked-in text
// for both template versions (or to the checked-in error body). The expected files were
// cross-checked against a transcription of DeepSeek's reference encoders (spec §0).

#include "recipe/protocol/parse_request.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/render/segment_builder.hpp"
#include "recipe/testdata/tokenizers.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>

using namespace deepinfer::recipe;
namespace fs = std::filesystem;

namespace {

const special_table& table(template_version v) { return test::real_table(v); }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Returns how many requests were checked.
std::size_t check_api(const std::string& api_name) {
  const auto api = *parse_api_kind(api_name);
  const fs::path dir = fs::path(test::source_dir()) / "recipe/testdata/golden" / api_name;
  std::size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto path = entry.path().string();
    if (!ends_with(path, ".json") || ends_with(path, ".err.json"))
      continue;
    const auto base = path.substr(0, path.size() - 5);
    BOOST_TEST_CONTEXT(path) {
      auto conv = parse_request(api, test::read_file(path));
      if (fs::exists(base + ".err.json")) {
        BOOST_REQUIRE(!conv.has_value());
        BOOST_TEST(conv.error().status == 400);
        BOOST_TEST(conv.error().body() == test::read_file(base + ".err.json"));
        ++checked;
        continue;
      }
      BOOST_REQUIRE_MESSAGE(conv.has_value(), (conv.has_value() ? std::string() : conv.error().body()));
      for (auto v : {template_version::dsv41, template_version::dsv32}) {
        const auto name = std::string(to_string(v));
        auto segs = render(*conv, table(v));
        if (fs::exists(base + "." + name + ".err.json")) {
          BOOST_REQUIRE(!segs.has_value());
          BOOST_TEST(segs.error().body() == test::read_file(base + "." + name + ".err.json"));
        } else {
          BOOST_REQUIRE_MESSAGE(segs.has_value(), name);
          BOOST_TEST(to_text(*segs) == test::read_file(base + "." + name + ".txt"), name);
        }
      }
      ++checked;
    }
  }
  return checked;
}

} // namespace

BOOST_AUTO_TEST_SUITE(golden)

BOOST_AUTO_TEST_CASE(chat_completions_requests_render_as_recorded) { BOOST_TEST(check_api("chat") >= 13u); }

BOOST_AUTO_TEST_CASE(responses_requests_render_as_recorded) { BOOST_TEST(check_api("responses") >= 11u); }

BOOST_AUTO_TEST_CASE(messages_requests_render_as_recorded) { BOOST_TEST(check_api("messages") >= 11u); }

BOOST_AUTO_TEST_CASE(same_conversation_renders_the_same_from_every_api) {
  // 04 is one tool loop written in each API's terms; the prompts must be identical.
  for (const char* v : {"dsv41", "dsv32"}) {
    const auto dir = test::source_dir() + "/recipe/testdata/golden/";
    const auto chat = test::read_file(dir + "chat/04-tool-loop-thinking." + v + ".txt");
    BOOST_TEST(chat == test::read_file(dir + "messages/04-tool-loop-thinking." + v + ".txt"));
    BOOST_TEST(test::read_file(dir + "chat/05-parallel-calls-results-out-of-order." + v + ".txt") ==
               test::read_file(dir + "responses/05-parallel-calls-out-of-order." + v + ".txt"));
  }
}

BOOST_AUTO_TEST_SUITE_END()
