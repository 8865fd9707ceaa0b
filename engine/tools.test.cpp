// The command-line tools as a user runs them: real processes on a real model directory.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/cost_model_file.hpp"
#include "engine/testing/engine_fixture.hpp"
#include "recipe/base/checkout_paths.hpp"
#include "recipe/base/run_command.test.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

/// The tools' output without their log lines (stderr).
deepinfer::testing::command_result run(const std::string& cmd) {
  return deepinfer::testing::run_command(cmd);
}

std::string tool(const std::string& name) {
  return std::string{deepinfer::checkout::binary_dir()} + "/engine/" + name;
}

std::string tokenize_tool() {
  return std::string{deepinfer::checkout::binary_dir()} + "/recipe/deepinfer-tokenize";
}

/// Precondition: the engine's tools are built (and `tokenizer` too, when asked).
boost::test_tools::assertion_result tools_built(bool tokenizer) {
  std::vector<std::string> missing;
  for (auto path : {tool("deepinfer-generate"), tool("deepinfer-mkmodel")})
    if (!std::filesystem::exists(path))
      missing.push_back(path);
  if (tokenizer && !std::filesystem::exists(tokenize_tool()))
    missing.push_back(tokenize_tool());
  boost::test_tools::assertion_result r(missing.empty());
  for (auto& m : missing)
    r.message() << m << " ";
  if (!missing.empty())
    r.message() << "not built (build all targets: cmake --build --preset default)";
  return r;
}

boost::test_tools::assertion_result have_tools(boost::unit_test::test_unit_id) {
  return tools_built(false);
}

boost::test_tools::assertion_result have_tools_and_tokenizer(boost::unit_test::test_unit_id) {
  return tools_built(true);
}

} // namespace

BOOST_AUTO_TEST_SUITE(tools)

BOOST_AUTO_TEST_CASE(mkmodel_then_generate_prints_the_engines_greedy_tokens,
                     *boost::unit_test::precondition(have_tools)) {
  auto dir = scratch_dir("cli");
  const auto t0 = std::chrono::steady_clock::now();
  auto mk = run(tool("deepinfer-mkmodel") + " --config tiny --seed 7 --out " + dir + "/m");
  BOOST_REQUIRE_EQUAL(mk.status, 0);
  BOOST_TEST_MESSAGE("mkmodel tiny (weights + cost fit): "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  // It fitted the prefill cost model for the default serving setup and kept it beside the model.
  auto fits = cost_model_file::load(dir + "/m/cost_model.json");
  BOOST_REQUIRE_EQUAL(fits.entries().size(), 1u);
  BOOST_TEST((fits.entries()[0].isa == kernels::best_cpu_isa()));
  BOOST_TEST(fits.entries()[0].threads == 1);
  BOOST_TEST(fits.entries()[0].model.coefficients().a1 > 0.0);
  // Same config and seed as the fixture's model: the files are byte-identical.
  BOOST_TEST(std::filesystem::file_size(dir + "/m/model.safetensors") ==
             std::filesystem::file_size(tiny_model_dir() + "/model.safetensors"));
  auto prompt = random_tokens(200, 41);
  std::string ids;
  for (auto t : prompt)
    ids += std::to_string(t) + " ";
  auto g = run(tool("deepinfer-generate") + " --model " + dir + "/m --prompt-ids \"" + ids +
               "\" --max-tokens 5 --chunk 64");
  BOOST_REQUIRE_EQUAL(g.status, 0);
  // The same request through the library.
  auto& e = tiny_engine();
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.sampling.max_tokens = 5;
  auto p = e.prefill(req);
  std::string want = std::to_string(p.first.id);
  std::vector<sequence_id> one{req.seq};
  for (int i = 0; i < 4; ++i)
    want += " " + std::to_string(e.decode_step(one)[0].token.id);
  BOOST_TEST(g.out == want + "\n");
  e.free(req.seq);
  auto sampled = tool("deepinfer-generate") + " --model " + dir + "/m --prompt-ids \"" + ids +
                 "\" --max-tokens 6 --temperature 0.8 --top-k 50 --seed 3";
  auto s1 = run(sampled), s2 = run(sampled);
  BOOST_TEST(s1.status == 0);
  BOOST_TEST(s1.out == s2.out); // per-request seed: reproducible
}

BOOST_AUTO_TEST_CASE(text_prompt_is_the_tokenizers_ids_and_text_output_its_decoding,
                     *boost::unit_test::precondition(have_tools_and_tokenizer)) {
  auto tokenize = tokenize_tool();
  std::string text = "Hello, 世界! 1234 tokens";
  auto ids = run("printf '%s' '" + text + "' | " + tokenize + " encode");
  BOOST_REQUIRE_EQUAL(ids.status, 0);
  while (!ids.out.empty() && ids.out.back() == '\n')
    ids.out.pop_back();
  auto model = " --model " + tiny_model_dir() + " --max-tokens 4";
  auto by_text = run(tool("deepinfer-generate") + model + " --prompt '" + text + "' --text");
  auto by_ids = run(tool("deepinfer-generate") + model + " --prompt-ids \"" + ids.out + "\"");
  BOOST_REQUIRE_EQUAL(by_text.status, 0);
  BOOST_REQUIRE_EQUAL(by_ids.status, 0);
  auto nl = by_text.out.find('\n');
  BOOST_REQUIRE(nl != std::string::npos);
  BOOST_TEST(by_text.out.substr(0, nl + 1) == by_ids.out);
  auto decoded = run("printf '%s' '" + by_ids.out.substr(0, by_ids.out.size() - 1) + "' | " + tokenize + " decode");
  BOOST_TEST(by_text.out.substr(nl + 1) == decoded.out + "\n");
}

BOOST_AUTO_TEST_CASE(generate_fails_clearly_on_a_bad_model_directory,
                     *boost::unit_test::precondition(have_tools)) {
  auto r = run(tool("deepinfer-generate") + " --model /nonexistent --prompt-ids \"1 2\" 2>&1");
  BOOST_TEST(r.status != 0);
}

BOOST_AUTO_TEST_SUITE_END()
