// deepinfer-sim as a user runs it: a real process on a trace file and a config file.
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "recipe/base/checkout_paths.hpp"
#include "recipe/base/run_command.test.hpp"

namespace {

/// The simulator's output with its errors (stderr).
deepinfer::testing::command_result run(const std::string& cmd) {
  return deepinfer::testing::run_command(cmd, true);
}

const std::string sim = std::string{deepinfer::checkout::binary_dir()} + "/balancers/deepinfer-sim";

boost::test_tools::assertion_result sim_built(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(std::filesystem::exists(sim));
  r.message() << sim << " not built (build all targets: cmake --build --preset default)";
  return r;
}

/// A folder for one test, removed with it.
struct scratch {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("deepinfer-sim-cli-" + std::to_string(::getpid()));
  scratch() { std::filesystem::create_directories(dir); }
  ~scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(deepinfer_sim_cli)

// A typo in the config would otherwise run the defaults without a word; a value of the wrong
// type names its key. A good config runs and reports.
BOOST_AUTO_TEST_CASE(config_keys_are_checked_and_a_good_config_runs, *boost::unit_test::precondition(sim_built)) {
  scratch s;
  std::string trace;
  for (int i = 0; i < 20; ++i) // Mooncake's format: 512-token blocks, prefix-chained ids
    trace += R"({"timestamp": )" + std::to_string(i * 250) + R"(, "input_length": 1500, "output_length": 20, "hash_ids": [0, 1, )" +
             std::to_string(100 + i) + "]}\n";
  const auto trace_path = s.write("trace.jsonl", trace);
  const auto out = (s.dir / "out").string();
  auto typo = run(sim + " --trace " + trace_path + " --out " + out + " --config " +
                  s.write("typo.json", R"({"quota_per_rank": 2})"));
  BOOST_TEST(typo.status == 2, typo.out);
  BOOST_TEST(typo.out.find("unknown key 'quota_per_rank'") != std::string::npos, typo.out);
  BOOST_TEST(typo.out.find("quota_per_rank_s") != std::string::npos, typo.out); // the keys it knows
  auto wrong = run(sim + " --trace " + trace_path + " --out " + out + " --config " +
                   s.write("wrong.json", R"({"whole_job_fits": 3})"));
  BOOST_TEST(wrong.status == 2, wrong.out);
  BOOST_TEST(wrong.out.find("key 'whole_job_fits': 3 is not a boolean") != std::string::npos, wrong.out);
  auto good = run(sim + " --trace " + trace_path + " --out " + out + " --config " +
                  s.write("good.json", R"({"quota_per_rank_s": 2, "whole_job_fits": true})"));
  BOOST_REQUIRE_MESSAGE(good.status == 0, good.out);
  std::ifstream report{out + "/report.json"};
  BOOST_REQUIRE(report);
  const auto j = nlohmann::json::parse(report);
  BOOST_TEST(j.at("requests").get<int>() == 20, j.dump());
}

BOOST_AUTO_TEST_SUITE_END()
