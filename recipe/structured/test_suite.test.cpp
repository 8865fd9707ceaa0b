// The official JSON-Schema-Test-Suite (draft 2020-12) as a validity oracle: for every schema the
// compiler accepts, no instance the suite calls invalid may pass the masks, and most valid ones
// do (property order and a few spellings are stricter than validity).

#include "recipe/structured/json_validate.hpp"
#include "recipe/structured/test_support.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

using namespace deepinfer::recipe::so;

namespace {
std::filesystem::path tests_dir() {
  return deepinfer::recipe::test::source_dir().parent_path() / "shared" / "data" / "json_schema_test_suite" / "tests";
}
std::filesystem::path suite_dir() { return tests_dir() / "draft2020-12"; }
} // namespace

BOOST_AUTO_TEST_SUITE(structured_test_suite)

BOOST_AUTO_TEST_CASE(no_invalid_instance_of_the_official_suite_is_accepted) {
  const auto dir = suite_dir();
  if (!std::filesystem::exists(dir)) {
    BOOST_TEST_MESSAGE("skipped: " << dir << " missing (the shared data folder beside the repository)");
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

// The validator the compiler filters `enum`/`const` values with: on every test of the suite it
// decides (it refuses unevaluated*, $dynamicRef, remote refs and formats it does not know), its
// verdict is the suite's, but where the suite expects formats to be annotations only (the compiler
// enforces the formats it supports, so they are assertions here) or a custom meta-schema to turn
// validation off (vocabularies are not read).
BOOST_AUTO_TEST_CASE(the_validator_agrees_with_the_official_suite) {
  const auto dir = suite_dir();
  if (!std::filesystem::exists(dir)) {
    BOOST_TEST_MESSAGE("skipped: " << dir << " missing (the shared data folder beside the repository)");
    return;
  }
  std::size_t decided = 0, refused = 0, disagree = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    if (f.path().extension() != ".json")
      continue;
    std::ifstream in(f.path());
    const auto doc = nlohmann::ordered_json::parse(in);
    for (const auto& group : doc)
      for (const auto& t : group["tests"]) {
        auto b = budget::unbounded();
        json_validator v{group["schema"], b};
        try {
          const bool ok = v.valid(t["data"], group["schema"]);
          ++decided;
          const auto what = t["description"].get<std::string>();
          const bool expected_difference = what.find("only an annotation") != std::string::npos ||
                                           f.path().filename() == "vocabulary.json";
          if (ok != t["valid"].get<bool>() && !expected_difference) {
            ++disagree;
            BOOST_TEST_MESSAGE("validator: " << f.path().filename().string() << ": " << group["description"] << " / "
                                             << t["description"] << ": " << ok);
          }
        } catch (const compile_error&) {
          ++refused;
        }
      }
  }
  BOOST_TEST_MESSAGE("validator on the suite: " << decided << " decided, " << disagree << " disagree, " << refused
                                                << " refused");
  BOOST_TEST(disagree == 0u);
  BOOST_TEST(decided > refused * 2);  // refused: unevaluated*, $dynamicRef, references outside the document
}

// The suite's optional/format tests read formats as assertions, as the compiler does for every
// format it knows (2020-12 makes them annotations unless a vocabulary asks; an output that a
// strict validator refuses is no use): no string the suite calls invalid passes, in each draft
// from 4 on. Each format is its strings or a subset (quoted e-mail local parts, punycode labels,
// IPv6 with an IPv4 tail and a leap second at a non-zero offset are left out), so some valid
// ones are refused.
BOOST_AUTO_TEST_CASE(no_string_the_suites_format_assertions_call_invalid_passes) {
  if (!std::filesystem::exists(tests_dir())) {
    BOOST_TEST_MESSAGE("skipped: " << tests_dir() << " missing (the shared data folder beside the repository)");
    return;
  }
  auto& c = deepinfer::recipe::so::test::shared_compiler();
  std::size_t groups = 0, invalid = 0, valid = 0, valid_accepted = 0;
  for (const char* draft : {"draft2020-12", "draft2019-09", "draft7", "draft6", "draft4"}) {
    const auto dir = tests_dir() / draft / "optional" / "format";
    BOOST_REQUIRE(std::filesystem::exists(dir));
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(f.path());
      for (const auto& group : nlohmann::ordered_json::parse(in)) {
        auto m = c.compile({constraint_kind::json_schema, group["schema"].dump()});
        BOOST_TEST_REQUIRE(m.has_value(), f.path() << ": " << (m ? "" : m.error()));
        ++groups;
        for (const auto& t : group["tests"]) {
          if (!t["data"].is_string())
            continue;
          const bool ok = deepinfer::recipe::so::test::accepts(**m, t["data"].dump());
          if (t["valid"].get<bool>()) {
            ++valid, valid_accepted += ok;
          } else {
            ++invalid;
            BOOST_TEST(!ok, draft << "/" << f.path().filename().string() << ": " << t["description"] << ": "
                                  << t["data"].dump());
          }
        }
      }
    }
  }
  BOOST_TEST_MESSAGE("format assertions: " << groups << " schemas, " << invalid << " invalid strings (none passes), "
                                           << valid_accepted << "/" << valid << " valid ones pass");
  BOOST_TEST(invalid > 400u);  // the five drafts' format files were all read
  BOOST_TEST(valid_accepted * 4 >= valid * 3);
}

BOOST_AUTO_TEST_SUITE_END()
