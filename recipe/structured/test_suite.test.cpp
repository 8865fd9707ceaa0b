// The official JSON-Schema-Test-Suite (draft 2020-12) as a validity oracle: for every schema the
// compiler accepts, no instance the suite calls invalid may pass the masks, and most valid ones
// do (property order and a few spellings are stricter than validity).

#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

using namespace deepinfer::recipe::so;

BOOST_AUTO_TEST_SUITE(structured_test_suite)

BOOST_AUTO_TEST_CASE(no_invalid_instance_of_the_official_suite_is_accepted) {
  const auto dir = deepinfer::recipe::test::source_dir().parent_path() / "shared" / "data" / "json_schema_test_suite" /
                   "tests" / "draft2020-12";
  if (!std::filesystem::exists(dir)) {
    BOOST_TEST_MESSAGE("skipped: " << dir << " missing");
    return;
  }
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  std::size_t compiled = 0, groups = 0, invalid = 0, invalid_accepted = 0, valid = 0, valid_accepted = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".json")
      continue;
    std::ifstream in(f.path());
    const auto doc = nlohmann::ordered_json::parse(in);
    for (const auto& group : doc) {
      ++groups;
      auto m = c.compile({constraint_kind::json_schema, group["schema"].dump()});
      if (!m)
        continue;
      ++compiled;
      for (const auto& t : group["tests"]) {
        const bool ok = deepinfer::recipe::so::test::accepts(**m, t["data"].dump());
        if (t["valid"].get<bool>()) {
          ++valid, valid_accepted += ok;
        } else {
          ++invalid, invalid_accepted += ok;
          BOOST_TEST(!ok, f.path().filename().string() << ": " << group["description"] << " / " << t["description"]);
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("test suite: " << compiled << "/" << groups << " schemas compiled, valid accepted " << valid_accepted
                                    << "/" << valid << ", invalid accepted " << invalid_accepted << "/" << invalid);
  BOOST_TEST(compiled * 3 > groups);  // the suite exercises every keyword, supported or not
  BOOST_TEST(valid_accepted * 10 >= valid * 8);
}

BOOST_AUTO_TEST_SUITE_END()
