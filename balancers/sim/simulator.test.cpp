#include "balancers/sim/agent_workload.hpp"
#include "balancers/sim/rate_workload.hpp"
#include "balancers/sim/simulator.hpp"
#include "balancers/sim/trace_workload.hpp"

#include <filesystem>
#include <fstream>
#include <boost/test/unit_test.hpp>

#include <deque>

using namespace deepinfer::balancers;
using namespace deepinfer::balancers::sim;

namespace {

/// A fixed list of requests, open loop.
class list_workload : public workload {
public:
  explicit list_workload(std::deque<sim_request> r) : reqs_(std::move(r)) {}
  std::optional<sim_request> next() override {
    if (reqs_.empty())
      return std::nullopt;
    auto r = std::move(reqs_.front());
    reqs_.pop_front();
    return r;
  }
  std::string name() const override { return "list"; }

private:
  std::deque<sim_request> reqs_;
};

sim_request make(uint64_t id, double at, int64_t len, int64_t out, uint64_t salt) {
  sim_request r;
  r.id = id;
  r.arrival = at;
  r.input_len = len;
  r.output_len = out;
  r.prompt_blocks = len / 128;
  for (int64_t k = 0; k < r.prompt_blocks; ++k)
    r.chain.push_back(mix64(salt * 1000 + static_cast<uint64_t>(k)));
  return r;
}

/// Runs `cfg` over `reqs` (open loop).
sim_result run_list(const sim_config& cfg, std::deque<sim_request> reqs) {
  list_workload wl(std::move(reqs));
  return simulator(cfg, wl).run();
}

} // namespace

BOOST_AUTO_TEST_SUITE(simulator_suite)

BOOST_AUTO_TEST_CASE(mooncake_rows_parse_and_share_chain_ids_by_512_block) {
  const auto r = trace_workload::parse_mooncake(
      R"({"timestamp": 27482, "input_length": 1100, "output_length": 7, "hash_ids": [5, 9, 11]})");
  BOOST_TEST(r.t == 27.482);
  BOOST_TEST(r.input_len == 1100);
  BOOST_TEST(r.output_len == 7);
  const auto c = trace_workload::chain_of(r, 0);
  BOOST_TEST(c.size() == 8u); // floor(1100 / 128)
  auto other = r;
  other.hash_ids = {5, 10, 12};
  const auto d = trace_workload::chain_of(other, 1);
  for (size_t k = 0; k < 4; ++k)
    BOOST_TEST(c[k] == d[k]);
  BOOST_TEST(c[4] != d[4]);
}

BOOST_AUTO_TEST_CASE(azure_rows_parse_date_time_and_counts) {
  const auto r = trace_workload::parse_azure("2023-11-16 18:17:03.9799600,4808,10");
  BOOST_TEST(r.t == 18 * 3600 + 17 * 60 + 3.97996, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.input_len == 4808);
  BOOST_TEST(r.output_len == 10);
  // The date counts: across midnight and a month's end (the 2024 traces span a week), a leap day.
  auto at = [](const char* line) {
    const auto x = trace_workload::parse_azure(line);
    return static_cast<double>(x.day) * 86400.0 + x.t;
  };
  BOOST_TEST(at("2023-12-01 00:00:01.5,1,1") - at("2023-11-30 23:59:59.5,1,1") == 2.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(at("2024-03-01 00:00:00,1,1") - at("2024-02-28 00:00:00,1,1") == 2 * 86400.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(trace_workload::parse_azure("1970-01-02 00:00:00,1,1").day == 1);
}

// A bad row names its file and line and says what a row looks like; a row without ids is
// allowed (every block unique); a trace out of time order replays in time order.
BOOST_AUTO_TEST_CASE(bad_trace_rows_are_named_and_rows_replay_in_time_order) {
  auto expect_error = [](const std::string& name, const std::string& text, const std::string& want) {
    const auto path = (std::filesystem::temp_directory_path() / name).string();
    std::ofstream(path) << text;
    try {
      trace_workload w({.path = path});
      BOOST_ERROR(name << ": no error");
    } catch (const std::runtime_error& e) {
      BOOST_TEST(std::string{e.what()}.find(want) != std::string::npos, e.what());
    }
    std::filesystem::remove(path);
  };
  const std::string good = R"({"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]})" "\n";
  expect_error("deepinfer-bt1.jsonl", good + R"({"timestamp": 9, "input_length": -5, "output_length": 5})" "\n",
               "line 2: input length -5");
  expect_error("deepinfer-bt2.jsonl", good + "not json\n", "line 2:");
  expect_error("deepinfer-bt3.jsonl", R"({"timestamp": 0, "output_length": 5})" "\n", "line 1: expected {\"timestamp\"");
  expect_error("deepinfer-bt4.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\nbad,row\n",
               "line 3: expected `YYYY-MM-DD");
  expect_error("deepinfer-bt5.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,37x,44\n", "line 2");
  const auto path = (std::filesystem::temp_directory_path() / "deepinfer-bt6.jsonl").string();
  std::ofstream(path) << R"({"timestamp": 5000, "input_length": 300, "output_length": 2})" "\n"
                      << R"({"timestamp": 1000, "input_length": 700, "output_length": 3})" "\n";
  trace_workload w({.path = path});
  std::filesystem::remove(path);
  const auto first = w.next().value(), second = w.next().value();
  BOOST_TEST(first.arrival == 0.0);
  BOOST_TEST(first.input_len == 700);
  BOOST_TEST(second.arrival == 4.0);
  BOOST_TEST(second.chain.size() == 2u); // no ids: its own blocks
  // An Azure trace across midnight: two seconds apart, not a day back.
  const auto csv = (std::filesystem::temp_directory_path() / "deepinfer-bt7.csv").string();
  std::ofstream(csv) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 23:59:59.5,300,1\n2023-11-17 00:00:01.5,300,1\n";
  trace_workload night({.path = csv});
  std::filesystem::remove(csv);
  BOOST_TEST(night.next().value().arrival == 0.0);
  BOOST_TEST(night.next().value().arrival == 2.0, boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(agent_turns_extend_the_previous_prompt_and_output) {
  agent_workload a({.session_rate = 1.0, .duration_s = 100.0, .turns_mean = 1000.0});
  const auto first = a.next().value();
  BOOST_TEST(first.input_len >= 6144);
  BOOST_TEST(first.ideal_hit == 6144);
  const auto second = a.follow_up(first, 10.0).value();
  BOOST_TEST(second.arrival >= 10.0);
  BOOST_TEST(second.input_len > first.input_len + first.output_len);
  BOOST_TEST(second.ideal_hit == (first.input_len + first.output_len) / 128 * 128);
  for (size_t k = 0; k < first.chain.size(); ++k)
    BOOST_TEST_REQUIRE(first.chain[k] == second.chain[k]);
  const auto other = a.next().value();
  BOOST_TEST(other.session != first.session);
  BOOST_TEST(other.chain[47] == first.chain[47]);  // shared system prompt (6144 / 128 = 48 blocks)
  BOOST_TEST(other.chain[48] != first.chain[48]);
}

BOOST_AUTO_TEST_CASE(one_request_timing_matches_the_cost_models_by_hand) {
  sim_config cfg;
  cfg.prefill_instances = 1;
  cfg.prefill_dp = 1;
  cfg.decode_instances = 1;
  cfg.decode_dp = 1;
  list_workload wl({make(0, 1.0, 1000, 3, 1)});
  simulator s(cfg, wl);
  const auto r = s.run();
  const auto m = deepinfer::balancers::cost_model::calibrate(cfg.prefill_calibration);
  BOOST_TEST_REQUIRE(r.ttft.size() == 1u);
  BOOST_TEST(r.ttft[0] == m.cost(1000, 0), boost::test_tools::tolerance(1e-5));
  BOOST_TEST(r.completed == 1);
  BOOST_TEST(r.decode_tokens == 2); // the first token came from prefill
  const auto& d = cfg.decode;
  const double step1 = d.t0 + d.moe_lb * d.gamma + d.alpha + d.beta * 1000;
  const double step2 = d.t0 + d.moe_lb * d.gamma + d.alpha + d.beta * 1001;
  BOOST_TEST(r.last_event == 1.0 + m.cost(1000, 0) + step1 + step2, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(r.hit_tokens == 0);
}

BOOST_AUTO_TEST_CASE(the_router_holds_a_decode_back_until_its_kv_reservation_fits) {
  // Two 1000-token prompts prefilled side by side (round robin over two instances) end at the
  // same time; each reserves 1000 + 3 - 1 = 1002 KV tokens on the one decode rank. With a pool of
  // 2003 (room for both prompts, not for both reservations) the serving_router refuses the second
  // until the first is released, so they decode one after the other; with a pool of 2004 the
  // second joins the first's second step (the first one's step started when it was placed).
  const auto m = deepinfer::balancers::cost_model::calibrate(sim_config{}.prefill_calibration);
  const auto d = sim_config{}.decode;
  const auto step = [&](double n, double kv) { return d.t0 + d.moe_lb * d.gamma * n + d.alpha * n + d.beta * kv; };
  for (const int64_t pool : {2003, 2004}) {
    const auto r = run_list({.prefill_instances = 2, .prefill_dp = 1, .decode_instances = 1, .decode_dp = 1,
                             .policy = prefill_policy::round_robin, .decode_router = {.max_kv_tokens = pool}},
                            {make(0, 0.0, 1000, 3, 1), make(1, 0.0, 1000, 3, 2)});
    BOOST_TEST(r.completed == 2);
    BOOST_TEST(r.decode_tokens == 4);
    const double decode = pool < 2004 ? 2.0 * (step(1, 1000) + step(1, 1001))
                                      : step(1, 1000) + step(2, 1001 + 1000) + step(1, 1002);
    BOOST_TEST(r.last_event == m.cost(1000, 0) + decode, boost::test_tools::tolerance(1e-6));
  }
}

BOOST_AUTO_TEST_CASE(quota_buckets_keep_a_prefill_in_the_router_while_the_instance_has_no_quota_left) {
  // One instance of two ranks: a short prompt starts a step, and two 16K prompts (0.223 s of quota
  // each) arrive while it runs. With 1 s of quota per rank the router hands both out at once, one
  // per rank, and they prefill side by side in the next steps, ending together. With 0.1 s the
  // first 16K one spends the instance's 0.2 s, so the router keeps the other queued -- the idle
  // rank does not take it -- until a computed chunk gives quota back, and it ends later.
  for (const double quota : {1.0, 0.1}) {
    const auto r = run_list({.prefill_instances = 1, .prefill_dp = 2, .decode_dp = 1, .quota_per_rank_s = quota},
                            {make(0, 0.0, 128, 2, 1), make(1, 0.001, 16 * 1024, 2, 2), make(2, 0.001, 16 * 1024, 2, 3)});
    BOOST_TEST_REQUIRE(r.ttft.size() == 3u); // in completion order
    BOOST_TEST(r.completed == 3);
    if (quota == 1.0)
      BOOST_TEST(r.ttft[2] == r.ttft[1], boost::test_tools::tolerance(1e-9));
    else
      BOOST_TEST(r.ttft[2] > r.ttft[1] + 0.01);
  }
}

BOOST_AUTO_TEST_CASE(a_repeated_prompt_hits_through_the_snapshot_exactly) {
  sim_config cfg;
  cfg.prefill_instances = 1;
  cfg.prefill_dp = 2;
  cfg.decode_dp = 2;
  // Same 1000-token prompt twice: the first stores 7 blocks and an SWA snapshot at 896; the second
  // has L1 = 768 (cap 866), no snapshot there -> hit 640 with replay.
  list_workload wl({make(0, 0.0, 1000, 2, 1), make(1, 5.0, 1000, 2, 1)});
  simulator s(cfg, wl);
  const auto r = s.run();
  BOOST_TEST(r.completed == 2);
  BOOST_TEST(r.hit_tokens == 640);
  BOOST_TEST(r.replay_hits == 1);
  BOOST_TEST(r.exact_hits == 0);
}

BOOST_AUTO_TEST_CASE(all_policies_drain_a_mixed_load_and_conserve_requests) {
  for (const auto p : {prefill_policy::quota_buckets, prefill_policy::round_robin, prefill_policy::least_outstanding}) {
    sim_config cfg;
    cfg.prefill_instances = 2;
    cfg.prefill_dp = 2;
    cfg.decode_dp = 4;
    cfg.policy = p;
    std::deque<sim_request> reqs;
    for (uint64_t i = 0; i < 200; ++i)
      reqs.push_back(make(i, 0.01 * static_cast<double>(i), 500 + static_cast<int64_t>((i * 7919) % 90000), 20, i % 5));
    list_workload wl(std::move(reqs));
    simulator s(cfg, wl);
    const auto r = s.run();
    BOOST_TEST(r.requests == 200);
    BOOST_TEST(r.completed == 200);
    BOOST_TEST(r.ttft.size() == 200u);
    BOOST_TEST(r.decode_tokens == 200 * 19);
    BOOST_TEST(r.prefill_ideal <= r.prefill_busy + 1e-9);
  }
}

namespace {

/// A day in 12 windows of 50 s (night, morning ramp, midday peak, evening, night), one Poisson
/// client, 16K-token prompts and 800-token outputs.
rate_workload day_shaped() {
  std::vector<rate_workload::window> w;
  const double rates[] = {1, 1, 2, 4, 8, 10, 10, 8, 4, 2, 1, 1};
  for (int i = 0; i < 12; ++i)
    w.push_back({.start_s = 50.0 * i, .rate_rps = rates[i], .scale = 1.0 / rates[i]});
  return rate_workload({w}, {{16000, 800}}, 50.0, 7, "day");
}

/// Single-rank instances; the autoscaler sized from the per-instance figures (a prefill rank
/// serves 60K uncached tok/s, DESIGN §9; a decode instance here 4 requests), short provisioning,
/// a ready pool of 1 and a 0.5 s grace so that drains hand requests off.
sim_config elastic_config() {
  sim_config c;
  c.prefill_instances = 1;
  c.prefill_dp = 1;
  c.decode_instances = 1;
  c.decode_dp = 1;
  c.autoscale_s = 5.0;
  c.scaling.prefill_missed_tok_per_s = 60e3;
  c.scaling.decode_requests = 4.0;
  c.scaling.ready_pool = 1;
  c.scaling.decode_grace_s = 0.5;
  c.provision.from_pool_s = 5.0;
  c.provision.cold_s = 20.0;
  c.ttft_slo_s = 2.0;
  return c;
}

} // namespace

BOOST_AUTO_TEST_CASE(rate_windows_keep_their_measured_rate_and_the_fitted_shape) {
  // A Gamma fit whose own mean (shape x scale = 1.6 s) is not the window's 0.085 rps.
  const auto w = rate_workload::parse_client_row("2400,0.085,6.69,Gamma,0.02232167101916883,73.01783087211976");
  BOOST_TEST((w.law == rate_workload::gap_law::gamma));
  BOOST_TEST(w.shape == 0.02232167101916883);
  BOOST_TEST(w.shape * w.scale == 1.0 / 0.085, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(rate_workload::parse_client_row("0,0,0,,0,0").rate_rps == 0.0);
  const auto a = rate_workload::parse_aggregate_row("600,18.4033,22,1.3119");
  BOOST_TEST(a.shape == 1.0 / (1.3119 * 1.3119), boost::test_tools::tolerance(1e-9));
  // Arrivals: about rate x window per window, in time order.
  auto wl = day_shaped();
  BOOST_TEST(wl.size() > 2200u);
  BOOST_TEST(wl.size() < 2700u); // 52 rps-windows x 50 s = 2600 expected
  double last = 0.0;
  while (auto r = wl.next()) {
    BOOST_TEST_REQUIRE(r->arrival >= last);
    last = r->arrival;
  }
  BOOST_TEST(last < 600.0);
}

BOOST_AUTO_TEST_CASE(applied_autoscaling_uses_fewer_rank_hours_than_static_peak_and_drains_lose_nothing) {
  auto cfg = elastic_config();
  cfg.autoscale = autoscale_mode::applied;
  auto wl = day_shaped();
  const auto n = static_cast<int64_t>(wl.size());
  auto scaled = simulator(cfg, wl).run();
  // Every request finished, every token generated exactly once (a handed-off request continues
  // where it stopped), and drains really handed requests off.
  BOOST_TEST(scaled.requests == n);
  BOOST_TEST(scaled.completed == n);
  BOOST_TEST(scaled.decode_tokens == n * 799);
  BOOST_TEST(scaled.tpot.size() == static_cast<size_t>(n));
  BOOST_TEST(scaled.handoffs > 0);
  BOOST_TEST(scaled.scale_ups > 0);
  BOOST_TEST(scaled.scale_downs > 0);
  BOOST_TEST(scaled.pool_starts > 0);
  BOOST_TEST(scaled.peak_prefill >= 3);
  BOOST_TEST(scaled.peak_decode >= 2);
  // The same load on a static cluster at the autoscaled peak.
  auto st = elastic_config();
  st.prefill_instances = scaled.peak_prefill;
  st.decode_instances = scaled.peak_decode;
  auto wl2 = day_shaped();
  auto fixed = simulator(st, wl2).run();
  BOOST_TEST(fixed.completed == n);
  BOOST_TEST(fixed.handoffs == 0);
  const double scaled_rank_s = scaled.prefill_rank_s + scaled.decode_rank_s;
  const double fixed_rank_s = fixed.prefill_rank_s + fixed.decode_rank_s;
  BOOST_TEST(fixed_rank_s == (st.prefill_instances + st.decode_instances) * fixed.end_s,
             boost::test_tools::tolerance(1e-9));
  BOOST_TEST_MESSAGE("rank-s autoscaled " << scaled_rank_s << " static " << fixed_rank_s << " handoffs "
                                         << scaled.handoffs << " peaks " << scaled.peak_prefill << "+" << scaled.peak_decode);
  BOOST_TEST(scaled_rank_s < 0.75 * fixed_rank_s);
  const auto attained = [](const std::vector<float>& v, double slo) {
    return static_cast<double>(std::count_if(v.begin(), v.end(), [&](float x) { return x <= slo; })) /
           static_cast<double>(v.size());
  };
  BOOST_TEST(attained(scaled.ttft, cfg.ttft_slo_s) >= 0.9);
  BOOST_TEST(attained(fixed.ttft, cfg.ttft_slo_s) >= 0.99);
}

BOOST_AUTO_TEST_CASE(the_baselines_place_over_the_running_instances_as_they_come_and_go) {
  for (const auto p : {prefill_policy::round_robin, prefill_policy::least_outstanding}) {
    auto cfg = elastic_config();
    cfg.autoscale = autoscale_mode::applied;
    cfg.policy = p;
    auto wl = day_shaped();
    const auto n = static_cast<int64_t>(wl.size());
    const auto r = simulator(cfg, wl).run();
    BOOST_TEST(r.completed == n);
    BOOST_TEST(r.decode_tokens == n * 799);
    BOOST_TEST(r.peak_prefill >= 3);
    BOOST_TEST(r.scale_downs > 0);
  }
}

BOOST_AUTO_TEST_CASE(a_drained_decode_instance_hands_its_request_and_kv_to_another_after_the_grace) {
  // Two decode instances, one long request on each; the first decision (t = 2 s) finds one
  // decode instance enough, so one drains; after the 1 s grace it hands its request off (pause:
  // latency + KV bytes / link) and leaves; the request finishes on the other with every token.
  sim_config cfg;
  cfg.prefill_instances = 1;
  cfg.prefill_dp = 1;
  cfg.decode_instances = 2;
  cfg.decode_dp = 1;
  cfg.autoscale = autoscale_mode::applied;
  cfg.autoscale_s = 2.0;
  cfg.scaling.decode_requests = 1000.0;
  cfg.scaling.ready_pool = 0;
  cfg.scaling.decode_grace_s = 1.0;
  const auto r = run_list(cfg, {make(0, 0.0, 1000, 5000, 1), make(1, 0.001, 1000, 5000, 2)});
  BOOST_TEST(r.completed == 2);
  BOOST_TEST(r.decode_tokens == 2 * 4999);
  BOOST_TEST(r.scale_downs == 1);
  BOOST_TEST(r.handoffs == 1);
  // The moved request held ~1000 prompt + a second's worth of output tokens.
  const auto& p = cfg.provision;
  BOOST_TEST(r.handoff_s > p.handoff_latency_s + 1000 * p.handoff_bytes_per_token / p.handoff_bytes_per_s);
  BOOST_TEST(r.handoff_s < p.handoff_latency_s + 5000 * p.handoff_bytes_per_token / p.handoff_bytes_per_s);
  // The drained instance cost ranks until it left (~3 s), the other until the end.
  BOOST_TEST(r.decode_rank_s > r.end_s + 3.0);
  BOOST_TEST(r.decode_rank_s < r.end_s + 3.1);
  BOOST_TEST(r.peak_decode == 2);
}

BOOST_AUTO_TEST_SUITE_END()
