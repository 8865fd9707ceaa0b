// Runs the built deepinfer-render as a real process (the default build builds it).

#include "recipe/base/checkout_paths.hpp"
#include "recipe/testdata/paths.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace deepinfer::recipe;

namespace {

struct run_result {
  int status;
  std::string out;
};

run_result run_render(const std::string& args, const std::string& input) {
  const fs::path bin = fs::path(deepinfer::checkout::binary_dir()) / "recipe" / "deepinfer-render";
  BOOST_REQUIRE_MESSAGE(fs::exists(bin), bin.string() + " not built");
  const fs::path dir = fs::temp_directory_path() / ("deepinfer-render-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "in", std::ios::binary) << input;
  const std::string cmd = "DEEPINFER_CACHE='" + test::cache_dir() + "' '" + bin.string() + "' " + args + " < '" +
                          (dir / "in").string() + "' > '" + (dir / "out").string() + "' 2>/dev/null";
  const int raw = std::system(cmd.c_str());
  run_result r{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, test::read_file((dir / "out").string())};
  fs::remove_all(dir);
  return r;
}

const std::string official_example =
    R"({"model": "m", "thinking": {"type": "enabled"}, "messages": [{"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hello! I am DeepSeek."}, {"role": "user", "content": "1+1=?"}]})";

} // namespace

BOOST_AUTO_TEST_SUITE(deepinfer_render_cli)

BOOST_AUTO_TEST_CASE(prints_the_prompt_text_exactly_without_a_newline) {
  const auto r = run_render("--api chat --template dsv32", official_example);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.out == "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek."
                      "<｜end▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>");
}

BOOST_AUTO_TEST_CASE(ids_match_the_model_card_example) {
  // spec §1: the official V3.2 example and its ids.
  const auto r = run_render("--api chat --template dsv32 --ids", official_example);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.out == "0 128803 33310 128804 128799 19923 3 342 1030 22651 4374 1465 16 1 128803 19 13 19 127252 "
                      "128804 128798");
}

BOOST_AUTO_TEST_CASE(default_template_is_dsv41_with_its_own_ids) {
  // Without --template the V4.1 prompt and ids are produced.
  const auto r41 = run_render("--api chat --ids", official_example);
  BOOST_TEST(r41.status == 0);
  BOOST_TEST(r41.out.rfind("0 128799 ", 0) == 0); // BOS, <｜System｜> (reasoning-effort line)
  BOOST_TEST(r41.out.substr(r41.out.size() - 13) == "128804 128821"); // <｜Assistant｜><think>
}

BOOST_AUTO_TEST_CASE(invalid_request_prints_the_api_error_body_and_exits_2) {
  auto r = run_render("--api chat", R"({"model": "m", "messages": [{"role": "user"}]})");
  BOOST_TEST(r.status == 2);
  auto body = nlohmann::json::parse(r.out);
  BOOST_TEST(body["error"]["param"] == "messages[0].content");
  BOOST_TEST(body["error"]["type"] == "invalid_request_error");
  r = run_render("--api messages", R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": 5}]})");
  BOOST_TEST(r.status == 2);
  body = nlohmann::json::parse(r.out);
  BOOST_TEST(body["type"] == "error");
  BOOST_TEST(body["error"]["message"].get<std::string>().rfind("messages.0.content:", 0) == 0);
  r = run_render("--api responses", "not json");
  BOOST_TEST(r.status == 2);
  BOOST_TEST(nlohmann::json::parse(r.out)["error"]["param"].is_null());
}

BOOST_AUTO_TEST_CASE(a_deeply_nested_body_is_refused_not_a_crash) {
  // 70,000 levels segfaulted the tool (and the server) before the depth limit.
  const std::string body = R"({"x":)" + std::string(70000, '[') + std::string(70000, ']') + R"(,"model":"m"})";
  auto r = run_render("--api chat", body);
  BOOST_TEST(r.status == 2);
  BOOST_TEST(nlohmann::json::parse(r.out)["error"]["message"].get<std::string>().find("64 levels") != std::string::npos);
  // --json-max-depth moves the limit: 70 levels pass the parse at 100 (and fail on the messages).
  const std::string seventy = R"({"x":)" + std::string(70, '[') + std::string(70, ']') + R"(,"model":"m"})";
  BOOST_TEST(nlohmann::json::parse(run_render("--api chat", seventy).out)["error"]["message"].get<std::string>().find(
               "deeply nested") != std::string::npos);
  r = run_render("--api chat --json-max-depth 100", seventy);
  BOOST_TEST(r.status == 2);
  BOOST_TEST(nlohmann::json::parse(r.out)["error"]["param"] == "messages");
}

BOOST_AUTO_TEST_CASE(usage_errors_exit_1) {
  BOOST_TEST(run_render("", "{}").status == 1);
  BOOST_TEST(run_render("--api chat --template dsv4", "{}").status == 1);
  BOOST_TEST(run_render("--api chat --json-max-depth 0", "{}").status == 1);
}

BOOST_AUTO_TEST_SUITE_END()
