// Runs the built deepinfer-tokenize as a real process (build it first: the default build does).

#include "recipe/base/checkout_paths.hpp"
#include "recipe/tokenizer/hf_reference.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <fstream>
#include <sstream>

using namespace deepinfer::recipe;

namespace {

struct run_result {
  int status;
  std::string out;
  std::string err;
};

run_result run_cli(const std::string& args, const std::string& input) {
  std::filesystem::path bin = std::filesystem::path{deepinfer::checkout::binary_dir()} / "recipe" / "deepinfer-tokenize";
  BOOST_REQUIRE_MESSAGE(std::filesystem::exists(bin), bin.string() + " not built");
  test::scratch_dir dir;
  std::ofstream(dir.path() / "in", std::ios::binary) << input;
  const std::string cmd = "DEEPINFER_CACHE='" + test::cache_dir().string() + "' '" + bin.string() + "' " + args + " < '" +
                          (dir.path() / "in").string() + "' > '" + (dir.path() / "out").string() + "' 2> '" +
                          (dir.path() / "err").string() + "'";
  const int raw = std::system(cmd.c_str());
  auto slurp = [&](const char* name) {
    std::ifstream in{dir.path() / name, std::ios::binary};
    std::stringstream b;
    b << in.rdbuf();
    return b.str();
  };
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp("out"), slurp("err")};
}

} // namespace

BOOST_AUTO_TEST_SUITE(deepinfer_tokenize_cli)

BOOST_AUTO_TEST_CASE(encode_prints_space_separated_ids) {
  const auto r = run_cli("--template dsv32 encode", "1234567 12.5");
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.out == "6895 18009 25 223 736 16 23\n");
}

BOOST_AUTO_TEST_CASE(encode_lines_gives_one_line_per_input_line) {
  const auto r = run_cli("encode --lines", "Hello 世界\n\n  hello  world\r\nsay <｜User｜>\n");
  BOOST_TEST(r.status == 0);
  auto tok = test::shared("tokenizer_v41.json");
  std::string want = "19923 223 3427\n\n";
  const auto line = tok->encode("  hello  world\r"); // CR stays in the line: split on LF only
  for (std::size_t i = 0; i < line.size(); ++i)
    want += std::to_string(line[i]) + (i + 1 < line.size() ? " " : "\n");
  want += "53072 818 28217 6756 28217 32\n";
  BOOST_TEST(r.out == want);
}

BOOST_AUTO_TEST_CASE(decode_inverts_encode) {
  const std::string text = "Hello! 毕老师！1 + 1 = 2\n\t<think>x</think> 👨‍👩‍👧‍👦\n";
  const auto enc = run_cli("--tokenizer '" + test::asset("tokenizer_v41.json").string() + "' encode", text);
  BOOST_REQUIRE_EQUAL(enc.status, 0);
  const auto dec = run_cli("decode", enc.out);
  BOOST_TEST(dec.status == 0);
  BOOST_TEST(dec.out == text);
  // Special ids decode to their spelling.
  BOOST_TEST(run_cli("decode", "128821 36101 128822").out == "<think>推理</think>");
}

BOOST_AUTO_TEST_CASE(bad_input_exits_2_with_a_message) {
  for (const auto& [args, input] : std::vector<std::pair<std::string, std::string>>{
         {"decode", "12 abc"}, {"decode", "999999"}, {"decode", "-1"}, {"encode", "ok\xC3("},
         {"frobnicate", ""}, {"", ""}, {"--template dsv99 encode", "x"}, {"decode --lines", "1"}}) {
    const auto r = run_cli(args, input);
    BOOST_TEST(r.status == 2, args);
    BOOST_TEST(!r.err.empty(), args);
    BOOST_TEST(r.out.empty(), args);
  }
}

BOOST_AUTO_TEST_SUITE_END()
