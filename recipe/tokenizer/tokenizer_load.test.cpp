#include "recipe/tokenizer/tokenizer.hpp"

#include "recipe/tokenizer/test_assets.hpp"

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace deepinfer::recipe;
using nlohmann::json;

namespace {

// A tiny but complete tokenizer.json: the real pre-tokenizer, the 256 byte tokens and a few merges.
json tiny() {
  std::ifstream in{test::asset("tokenizer_v32.json")};
  static const json real = json::parse(in);
  json t;
  t["version"] = "1.0";
  t["normalizer"] = real["normalizer"];
  t["pre_tokenizer"] = real["pre_tokenizer"];
  t["decoder"] = real["decoder"];
  json vocab = json::object();
  for (auto it = real["model"]["vocab"].begin(); it != real["model"]["vocab"].end(); ++it)
    if (it.value().get<int>() < 256 + 3)
      vocab[it.key()] = it.value();
  vocab["ab"] = 1000;
  vocab["abc"] = 1001;
  vocab["bc"] = 1002;
  t["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                {"vocab", vocab}, {"merges", {"b c", "a b", "ab c"}}};
  t["added_tokens"] = json::array({{{"id", 2000}, {"content", "<x>"}, {"special", true}, {"normalized", false},
                                    {"lstrip", false}, {"rstrip", false}, {"single_word", false}}});
  return t;
}

std::string error_of(const json& j) {
  tokenizer::config cfg;
  cfg.threads = 1;
  auto r = tokenizer::load_json(j.dump(), cfg);
  BOOST_TEST(!r);
  return r.error;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(tokenizer_load)

BOOST_AUTO_TEST_CASE(tiny_file_loads_and_merges_by_rank) {
  tokenizer::config cfg;
  cfg.threads = 1;
  auto r = tokenizer::load_json(tiny().dump(), cfg);
  BOOST_REQUIRE_MESSAGE(r, r.error);
  // "b c" has rank 0, so "abc" is a + bc: no merge (a, bc) exists, and "ab c" never applies.
  const auto ids = r.value->encode("abc");
  BOOST_REQUIRE_EQUAL(ids.size(), 2u);
  BOOST_TEST(ids[1] == 1002);
  BOOST_TEST(r.value->encode("ab") == std::vector<token_id>{1000});
  BOOST_TEST(*r.value->special_id("<x>") == 2000);
  BOOST_TEST(r.value->vocab_size() == 2001u);
  BOOST_TEST(!r.value->contains(1500));
}

BOOST_AUTO_TEST_CASE(malformed_files_name_the_json_path) {
  BOOST_TEST(starts_with(error_of(json::array()), "(document): expected an object"));
  auto t = tiny();
  t.erase("model");
  BOOST_TEST(starts_with(error_of(t), "/model: missing"));
  t = tiny();
  t["model"]["merges"][1] = "ab";
  BOOST_TEST(starts_with(error_of(t), "/model/merges/1: "));
  t = tiny();
  t["model"]["merges"][2] = "ab zz";
  BOOST_TEST(starts_with(error_of(t), "/model/merges/2: "));
  t = tiny();
  t["model"]["vocab"]["ab"] = "x";
  BOOST_TEST(starts_with(error_of(t), "/model/vocab/ab: "));
  t = tiny();
  t["pre_tokenizer"]["pretokenizers"][2]["pattern"]["Regex"] = "\\s+";
  BOOST_TEST(starts_with(error_of(t), "/pre_tokenizer/pretokenizers/2/pattern/Regex: "));
  t = tiny();
  t["added_tokens"][0]["lstrip"] = true;
  BOOST_TEST(starts_with(error_of(t), "/added_tokens/0/lstrip: "));
  t = tiny();
  t["added_tokens"][0]["id"] = -4;
  BOOST_TEST(starts_with(error_of(t), "/added_tokens/0/id: "));
  t = tiny();
  t["model"]["vocab"].erase("a");
  BOOST_TEST(starts_with(error_of(t), "/model/"));
  t = tiny();
  t["model"]["dropout"] = 0.1;
  BOOST_TEST(starts_with(error_of(t), "/model/dropout: "));
  t = tiny();
  t["normalizer"] = {{"type", "NFC"}};
  BOOST_TEST(starts_with(error_of(t), "/normalizer: "));
  tokenizer::config cfg;
  cfg.threads = 1;
  BOOST_TEST(tokenizer::load_json("{\"model\": ", cfg).error.find("not JSON") != std::string::npos);
  const auto missing = tokenizer::load("/nonexistent/tokenizer.json");
  BOOST_TEST(!missing);
  BOOST_TEST(missing.error.find("cannot open") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(default_paths_follow_the_template) {
  BOOST_TEST(default_tokenizer_path("/c", "dsv41")->string() == "/c/tokenizer/tokenizer_v41.json");
  BOOST_TEST(default_tokenizer_path("/c", "dsv32")->string() == "/c/tokenizer/tokenizer_v32.json");
  BOOST_TEST(!default_tokenizer_path("/c", "llama").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
