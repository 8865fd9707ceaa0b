#include "actors/http/api_keys.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using deepinfer::actors::http::api_keys;
using deepinfer::actors::http::read_api_keys_file;

namespace {

struct keys_file {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("deepinfer-keys-" + std::to_string(::getpid()) + ".txt");
  ~keys_file() { std::filesystem::remove(path); }
  void write(const std::string& text) const { std::ofstream(path) << text; }
};

} // namespace

BOOST_AUTO_TEST_SUITE(api_keys_suite)

BOOST_AUTO_TEST_CASE(a_keys_file_has_one_key_per_line_comments_and_blanks_skipped) {
  keys_file f;
  f.write("# team keys\n  key-alpha-0001  \n\n\tkey-beta-00002\r\n# key-gamma-0003\n");
  const auto r = read_api_keys_file(f.path.string());
  BOOST_TEST(r.error.empty());
  BOOST_TEST(r.keys == (std::vector<std::string>{"key-alpha-0001", "key-beta-00002"}));
}

BOOST_AUTO_TEST_CASE(a_bad_line_names_its_number_never_the_key) {
  keys_file f;
  f.write("key-alpha-0001\nshort7\n");
  const auto r = read_api_keys_file(f.path.string());
  BOOST_TEST(r.keys.empty());
  BOOST_TEST(r.error.find("line 2") != std::string::npos);
  BOOST_TEST(r.error.find("short7") == std::string::npos);
  f.write("key with spaces-1\n");
  BOOST_TEST(read_api_keys_file(f.path.string()).error.find("line 1") != std::string::npos);
  BOOST_TEST(!read_api_keys_file("/nonexistent/keys.txt").error.empty());
}

BOOST_AUTO_TEST_CASE(reload_swaps_the_file_keys_and_keeps_them_when_the_file_is_bad) {
  keys_file f;
  f.write("key-alpha-0001\n");
  api_keys k({"fixed-key-0001"}, f.path.string());
  BOOST_TEST(!k.reload());
  BOOST_TEST(k.accepts("key-alpha-0001"));
  BOOST_TEST(k.accepts("fixed-key-0001"));
  BOOST_TEST(!k.accepts("key-alpha-000"));
  BOOST_TEST(!k.accepts(""));
  f.write("key-beta-00002\n");
  BOOST_TEST(!k.reload());
  BOOST_TEST(!k.accepts("key-alpha-0001"));
  BOOST_TEST(k.accepts("key-beta-00002"));
  BOOST_TEST(k.accepts("fixed-key-0001")); // the fixed keys stay
  f.write("tiny\n");
  BOOST_TEST(k.reload().has_value());
  BOOST_TEST(k.accepts("key-beta-00002")); // a bad file changes nothing
  BOOST_TEST(k.size() == 2u);
}

BOOST_AUTO_TEST_CASE(an_empty_keys_file_still_requires_keys_and_no_keys_requires_none) {
  keys_file f;
  f.write("# nobody yet\n");
  api_keys k({}, f.path.string());
  BOOST_TEST(!k.reload());
  BOOST_TEST(k.required());
  BOOST_TEST(!k.accepts("anything-at-all"));
  api_keys open;
  BOOST_TEST(!open.required());
  BOOST_TEST(!api_keys({"fixed-key-0001"}, "").reload()); // no file: nothing to read
}

BOOST_AUTO_TEST_SUITE_END()
