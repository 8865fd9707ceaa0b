// The serving path in one process (node_runtime + entrypoint + engine ranks): a decode rank
// failure in the middle of a request is survived by resubmission; the request still completes.
#include <cstdlib>
#include <filesystem>
#include <future>
#include <sstream>
#include <thread>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "actors/http/http_test_client.hpp"
#include "actors/node/node_runtime.hpp"
#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"

using namespace deepinfer;
using actors::node_role;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

std::filesystem::path cache_dir() {
  if (const char* c = std::getenv("DEEPINFER_CACHE"); c && *c)
    return c;
  return std::filesystem::path{std::getenv("HOME") ? std::getenv("HOME") : "."} / ".cache/deepinfer";
}

std::filesystem::path tokenizer_path() {
  return cache_dir() / "tokenizer/tokenizer_v41.json";
}

boost::test_tools::assertion_result has_tokenizer(utf::test_unit_id) {
  boost::test_tools::assertion_result r(std::filesystem::exists(tokenizer_path()));
  if (!r)
    r.message() << "no tokenizer at " << tokenizer_path().string() << " (run scripts/bootstrap.sh)";
  return r;
}

/// The sum of the samples in Prometheus text `metrics` whose line starts with `prefix`.
double sum_of(const std::string& metrics, const std::string& prefix) {
  std::istringstream in{metrics};
  double sum = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0)
      sum += std::stod(line.substr(line.rfind(' ') + 1));
  return sum;
}

} // namespace

BOOST_AUTO_TEST_SUITE(serving)

BOOST_AUTO_TEST_CASE(request_survives_a_decode_rank_failure_by_resubmission,
                     *utf::precondition(has_tokenizer)) {
  auto tok = tokenizer_path();
  auto model = std::filesystem::temp_directory_path() / ("deepinfer-serving-test-" + std::to_string(::getpid()));
  BOOST_REQUIRE(engine::random_model::write(engine::model_config::tiny(), 7, model.string()).empty());

  actors::node_runtime_config cfg;
  cfg.self.name = "t";
  cfg.self.roles = {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode};
  cfg.hosts_controller = true;
  cfg.instances = {{node_role::prefill, 2}, {node_role::decode, 2}};
  actors::http_endpoint ep;
  ep.port = 0;
  ep.models = {"m"};
  cfg.http = ep;
  actors::serving_config sc;
  sc.model_dir = model.string();
  sc.tokenizer_path = tok.string();
  sc.model_name = "m";
  cfg.serving = sc;
  actors::node_runtime node{cfg};
  BOOST_REQUIRE(!node.start());

  auto body = nlohmann::json{{"model", "m"}, {"max_tokens", 300}, {"temperature", 0},
                             {"messages", {{{"role", "user"}, {"content", "Count slowly."}}}}}.dump();
  auto reply = std::async(std::launch::async, [&] {
    actors::http::testing::http_test_client c{node.http_port()};
    return c.request(boost::beast::http::verb::post, "/v1/chat/completions", body);
  });
  // Wait until a decode rank holds the sequence, then fail the decode ranks: the instance
  // restarts and the request is resubmitted (prefill of prompt + tokens so far) instead of being
  // lost. The deadline only bounds a broken run (a loaded 2-core machine prefills in seconds).
  auto decoding = [&] {
    actors::http::testing::http_test_client c{node.http_port()};
    auto m = c.request(boost::beast::http::verb::get, "/metrics").body();
    return sum_of(m, "deepinfer_rank_active_sequences{instance=\"t/decode\"") >= 1;
  };
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  bool decoding_now = false;
  while (!(decoding_now = decoding()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  BOOST_REQUIRE_MESSAGE(decoding_now, "the request never reached a decode rank within 60 s");
  // Still mid-request: 300 tokens take far longer than the poll.
  BOOST_REQUIRE(reply.wait_for(0s) == std::future_status::timeout);
  BOOST_REQUIRE(node.inject_rank_failure(node_role::decode, 0, "test"));
  BOOST_REQUIRE(node.inject_rank_failure(node_role::decode, 1, "test"));
  BOOST_REQUIRE(reply.wait_for(60s) == std::future_status::ready);
  auto res = reply.get();
  BOOST_TEST(res.result_int() == 200u);
  auto j = nlohmann::json::parse(res.body());
  BOOST_TEST(j["usage"]["completion_tokens"].get<int>() == 300);
  BOOST_TEST(j["choices"][0]["finish_reason"].get<std::string>() == "length");
  auto st = node.instance(node_role::decode);
  BOOST_REQUIRE(st.has_value());
  BOOST_TEST(st->generation >= 2u);  // the decode instance restarted
  node.stop();
  std::filesystem::remove_all(model);
}

BOOST_AUTO_TEST_SUITE_END()
