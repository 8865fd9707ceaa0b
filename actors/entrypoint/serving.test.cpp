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
#include "engine/cost_model_file.hpp"

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

/// One node with the controller, the entrypoint (model "m", any port) and `instances`, serving the
/// tiny model in `model`.
actors::node_runtime_config serving_node(const std::filesystem::path& model, std::vector<actors::node_role> roles,
                                         std::vector<actors::instance_spec> instances) {
  actors::node_runtime_config cfg;
  cfg.self.name = "t";
  cfg.self.roles = actors::role_set{roles};
  cfg.hosts_controller = true;
  cfg.instances = std::move(instances);
  actors::http_endpoint ep;
  ep.port = 0;
  ep.models = {"m"};
  cfg.http = ep;
  actors::serving_config sc;
  sc.model_dir = model.string();
  sc.tokenizer_path = tokenizer_path().string();
  sc.model_name = "m";
  cfg.serving = sc;
  return cfg;
}

} // namespace

BOOST_AUTO_TEST_SUITE(serving)

BOOST_AUTO_TEST_CASE(request_survives_a_decode_rank_failure_by_resubmission,
                     *utf::precondition(has_tokenizer)) {
  auto model = std::filesystem::temp_directory_path() / ("deepinfer-serving-test-" + std::to_string(::getpid()));
  BOOST_REQUIRE(engine::random_model::write(engine::model_config::tiny(), 7, model.string()).empty());
  auto cfg = serving_node(model, {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode},
                          {{node_role::prefill, 2}, {node_role::decode, 2}});
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

BOOST_AUTO_TEST_CASE(a_nearly_full_decode_rank_is_passed_over_instead_of_failing_an_import,
                     *utf::precondition(has_tokenizer)) {
  auto model = std::filesystem::temp_directory_path() / ("deepinfer-serving-room-" + std::to_string(::getpid()));
  BOOST_REQUIRE(engine::random_model::write(engine::model_config::tiny(), 7, model.string()).empty());
  auto cfg = serving_node(model, {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode},
                          {{node_role::prefill, 1}, {node_role::decode, 2}});
  // Each decode rank holds 4 blocks (512 tokens): one request of ~150-310 prompt tokens plus
  // 200 to generate fits, two do not. The old router (16M tokens assumed per rank) put the third
  // request on a full rank, whose import failed.
  cfg.serving->decode_kv_blocks_per_rank = 4;
  actors::node_runtime node{cfg};
  BOOST_REQUIRE(!node.start());

  std::string words;
  for (int i = 0; i < 300; ++i)
    words += "a ";
  auto body = nlohmann::json{{"model", "m"}, {"max_tokens", 200}, {"temperature", 0},
                             {"messages", {{{"role", "user"}, {"content", words}}}}}.dump();
  std::vector<std::future<boost::beast::http::response<boost::beast::http::string_body>>> replies;
  for (int i = 0; i < 3; ++i)
    replies.push_back(std::async(std::launch::async, [&] {
      actors::http::testing::http_test_client c{node.http_port()};
      return c.request(boost::beast::http::verb::post, "/v1/chat/completions", body);
    }));
  // While they run, no decode rank ever holds more than one of them, and the third waits for room.
  double most_on_one_rank = 0;
  double most_reserved = 0;
  auto all_ready = [&] {
    for (auto& r : replies)
      if (r.wait_for(0s) != std::future_status::ready)
        return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (!all_ready() && std::chrono::steady_clock::now() < deadline) {
    actors::http::testing::http_test_client c{node.http_port()};
    auto m = c.request(boost::beast::http::verb::get, "/metrics").body();
    for (int r = 0; r < 2; ++r) {
      auto label = "{instance=\"t/decode\",rank=\"" + std::to_string(r) + "\"}";
      most_on_one_rank = std::max(most_on_one_rank, sum_of(m, "deepinfer_rank_active_sequences" + label));
      most_reserved = std::max(most_reserved, sum_of(m, "deepinfer_decode_router_kv_reserved_tokens" + label));
    }
    std::this_thread::sleep_for(20ms);
  }
  BOOST_REQUIRE_MESSAGE(all_ready(), "the three requests did not finish within 120 s");
  std::string first_text;
  for (auto& f : replies) {
    auto res = f.get();
    BOOST_TEST_REQUIRE(res.result_int() == 200u, res.body());
    auto j = nlohmann::json::parse(res.body());
    BOOST_TEST(j["usage"]["completion_tokens"].get<int>() == 200);
    auto text = j["choices"][0]["message"]["content"].get<std::string>();
    if (first_text.empty())
      first_text = text;
    BOOST_TEST(text == first_text); // greedy: the same text wherever (and whenever) it ran
  }
  BOOST_TEST(most_on_one_rank <= 1.0);
  BOOST_TEST(most_reserved > 0.0);
  BOOST_TEST(most_reserved <= 512.0);

  // n = 2: the two choices' KV (2 x ~500 tokens) fits no rank, one choice's does. The choices
  // stop sharing a rank and each is placed alone, instead of waiting for room that never comes
  // and ending in a 503.
  actors::http::testing::http_test_client c{node.http_port()};
  auto two = nlohmann::json::parse(body);
  two["n"] = 2;
  auto res = c.request(boost::beast::http::verb::post, "/v1/chat/completions", two.dump());
  BOOST_TEST_REQUIRE(res.result_int() == 200u, res.body());
  auto j = nlohmann::json::parse(res.body());
  BOOST_TEST_REQUIRE(j["choices"].size() == 2u);
  for (const auto& choice : j["choices"])
    BOOST_TEST(choice["message"]["content"].get<std::string>() == first_text);
  // One choice that fits no rank's pool is the request's own size: a 400 at once that says what
  // to lower (waiting cannot help).
  auto large = nlohmann::json::parse(body);
  large["max_tokens"] = 400;
  const auto asked = std::chrono::steady_clock::now();
  res = c.request(boost::beast::http::verb::post, "/v1/chat/completions", large.dump());
  BOOST_TEST(res.result_int() == 400u, res.body());
  BOOST_TEST(res.body().find("lower max_tokens") != std::string::npos, res.body());
  BOOST_TEST(res.body().find("invalid_request_error") != std::string::npos, res.body());
  BOOST_TEST((std::chrono::steady_clock::now() - asked < 10s));
  node.stop();
  std::filesystem::remove_all(model);
}

// A request that names no max_tokens gets the default, lowered to what the context leaves after
// its prompt (before: prompt + the default over the context limit was a 400 about a limit the
// client never set).
BOOST_AUTO_TEST_CASE(a_request_without_max_tokens_gets_what_the_context_leaves, *utf::precondition(has_tokenizer)) {
  auto model = std::filesystem::temp_directory_path() / ("deepinfer-serving-default-" + std::to_string(::getpid()));
  BOOST_REQUIRE(engine::random_model::write(engine::model_config::tiny(), 7, model.string()).empty());
  auto cfg = serving_node(model, {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode},
                          {{node_role::prefill, 1}, {node_role::decode, 1}});
  cfg.serving->context_limit = 400;
  cfg.serving->requests.default_max_tokens = 256;
  actors::node_runtime node{cfg};
  BOOST_REQUIRE(!node.start());
  std::string words;
  for (int i = 0; i < 300; ++i)
    words += "a ";
  actors::http::testing::http_test_client c{node.http_port()};
  auto ask = [&](std::optional<int> max_tokens) {
    auto body = nlohmann::json{{"model", "m"}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", words}}}}};
    if (max_tokens)
      body["max_tokens"] = *max_tokens;
    return c.request(boost::beast::http::verb::post, "/v1/chat/completions", body.dump());
  };
  auto res = ask(std::nullopt);
  BOOST_TEST_REQUIRE(res.result_int() == 200u, res.body());
  auto usage = nlohmann::json::parse(res.body())["usage"];
  const auto prompt = usage["prompt_tokens"].get<int>();
  BOOST_TEST_REQUIRE(prompt + 256 > 400); // the default alone would not fit
  BOOST_TEST(prompt + usage["completion_tokens"].get<int>() <= 400);
  // Named, the same limit is the client's own: over the context it is still a 400.
  res = ask(256);
  BOOST_TEST(res.result_int() == 400u, res.body());
  BOOST_TEST(res.body().find("maximum context length is 400") != std::string::npos, res.body());
  node.stop();
  std::filesystem::remove_all(model);
}

// The entrypoint prices prefills with the fit kept beside the model (not constants, and not a
// new measurement when the file has one for this setup).
BOOST_AUTO_TEST_CASE(the_entrypoint_prices_with_the_fit_kept_beside_the_model, *utf::precondition(has_tokenizer)) {
  auto model = std::filesystem::temp_directory_path() / ("deepinfer-cost-test-" + std::to_string(::getpid()));
  BOOST_REQUIRE(engine::random_model::write(engine::model_config::tiny(), 7, model.string()).empty());
  engine::cost_model_file fits;
  fits.put({engine::kernels::best_cpu_isa(), 1, deepinfer::balancers::cost_model({.a0 = 0.125, .a1 = 2.5e-4, .f0 = 0.5}), 20, 0.1, engine::backend_kind::cpu, {}});
  BOOST_REQUIRE(fits.save((model / "cost_model.json").string()).empty());

  actors::node_runtime node{serving_node(model, {node_role::controller, node_role::entrypoint}, {})};
  BOOST_REQUIRE(!node.start());
  actors::http::testing::http_test_client c{node.http_port()};
  auto m = c.request(boost::beast::http::verb::get, "/metrics").body();
  BOOST_TEST(sum_of(m, "deepinfer_prefill_cost_model{term=\"a0\"}") == 0.125);
  BOOST_TEST(sum_of(m, "deepinfer_prefill_cost_model{term=\"a1\"}") == 2.5e-4, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(sum_of(m, "deepinfer_prefill_cost_model{term=\"f0\"}") == 0.5);
  node.stop();
  BOOST_TEST(engine::cost_model_file::load((model / "cost_model.json").string()).entries().size() == 1u);
  std::filesystem::remove_all(model);
}

BOOST_AUTO_TEST_SUITE_END()
