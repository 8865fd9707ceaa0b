#include "balancers/sim/simulator.hpp"

#include "kv/hit_policy.hpp"
#include "balancers/sim/stats.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

namespace deepinfer::balancers::sim {

simulator::simulator(const sim_config& cfg, workload& wl)
    : cfg_(cfg), wl_(wl), cost_(balancers::cost_model::calibrate(cfg.prefill_calibration)), cache_(cfg.cache),
      router_(serving_router::config{.prefill = {.quota_per_rank_s = cfg.quota_per_rank_s,
                                                 .whole_job_fits = cfg.whole_job_fits,
                                                 .short_reserve_s = cfg.short_reserve_s},
                                     .decode = cfg.decode_router}),
      scaler_(cfg.scaling),
      fleet_(fleet::config{.prefill_dp = cfg.prefill_dp, .decode_dp = cfg.decode_dp,
                           .ready_pool = cfg.autoscale == autoscale_mode::applied ? cfg.scaling.ready_pool : 0,
                           .from_pool_s = cfg.provision.from_pool_s, .cold_s = cfg.provision.cold_s}),
      prefill_(static_cast<size_t>(cfg.prefill_instances)), decode_(static_cast<size_t>(cfg.decode_instances)),
      dranks_(static_cast<size_t>(cfg.decode_instances * cfg.decode_dp)) {
  for (auto& p : prefill_)
    p.ranks.resize(static_cast<size_t>(cfg.prefill_dp));
  // The initial cluster is up at t = 0 (and its ready pool, when scaling is applied); each decode
  // rank is sized by the router's default KV capacity (cfg.decode_router.max_kv_tokens).
  fleet_.seed(instance_role::prefill, cfg.prefill_instances, 0.0);
  fleet_.seed(instance_role::decode, cfg.decode_instances, 0.0);
  fleet_.fill_pool(0.0);
  for (int i = 0; i < cfg.prefill_instances; ++i)
    instance_index_["prefill-" + std::to_string(i)] = i;
  for (int i = 0; i < cfg.decode_instances; ++i)
    instance_index_["decode-" + std::to_string(i)] = i;
  announce(instance_role::prefill);
  announce(instance_role::decode);
  record_peaks();
  res_.workload = wl.name();
}

int simulator::instance_index(const std::string& name) const {
  return instance_index_.at(name);
}

void simulator::pull_arrival() {
  auto r = wl_.next();
  if (!r) {
    arrivals_done_ = true;
    return;
  }
  const double at = r->arrival;
  q_.push(at, [this, req = std::move(*r)]() mutable {
    arrive(std::move(req));
    pull_arrival();
  });
}

void simulator::arrive(sim_request r) {
  const double now = q_.now();
  if (res_.requests == 0)
    res_.first_arrival = now;
  ++res_.requests;
  // DESIGN §4.3 against the cache state at arrival.
  const std::span<const uint64_t> prompt(r.chain.data(), static_cast<size_t>(r.prompt_blocks));
  const int64_t stored = cache_.match(prompt, now);
  // The production policy (kv/), asked about an SWA snapshot only when there is an L1.
  const auto decision = kv::hit_policy{}.decide(
    static_cast<size_t>(r.input_len), static_cast<size_t>(stored), [&](size_t l1) {
      return cache_.has_snapshot(r.chain[l1 / kv::block_tokens - 1], now);
    });
  struct {
    int64_t hit;
    bool exact;
  } hit{static_cast<int64_t>(decision.hit_length), decision.swa == kv::swa_mode::exact};
  res_.input_tokens += r.input_len;
  res_.hit_tokens += hit.hit;
  res_.ideal_hit_tokens += r.ideal_hit;
  res_.exact_hits += hit.exact ? 1 : 0;
  res_.replay_hits += (hit.hit > 0 && !hit.exact) ? 1 : 0;
  win_input_ += r.input_len;
  win_hit_ += hit.hit;
  scale_missed_ += r.input_len - hit.hit;
  const uint64_t id = r.id;
  auto& f = flights_[id];
  f.hit = hit.hit;
  f.done = hit.hit;
  f.quota = cost_.cost(static_cast<double>(r.input_len - hit.hit), static_cast<double>(hit.hit));
  f.req = std::move(r);
  place_prefill(id);
}

void simulator::sample() {
  sim_series& s = res_.series;
  s.t.push_back(q_.now());
  s.hit_ratio.push_back(win_input_ > 0 ? static_cast<double>(win_hit_) / static_cast<double>(win_input_) : 0.0);
  s.ttft_p99.push_back(percentile(win_ttft_, 99.0));
  const int decode_up = fleet_.count(instance_role::decode, instance_state::running) +
                        fleet_.count(instance_role::decode, instance_state::draining);
  s.decode_tok_s_rank.push_back(static_cast<double>(win_decode_tokens_) / cfg_.sample_s /
                                static_cast<double>(std::max(1, decode_up * cfg_.decode_dp)));
  std::vector<float> pl;
  for (size_t i = 0; i < prefill_.size(); ++i)
    if (serving(instance_role::prefill, static_cast<int>(i)))
      for (const auto& r : prefill_[i].ranks)
        pl.push_back(static_cast<float>(r.quota_load));
  s.prefill_rank_load.push_back(std::move(pl));
  std::vector<float> dk;
  for (size_t g = 0; g < dranks_.size(); ++g)
    if (fleet_.state(instance_role::decode, static_cast<int>(g) / cfg_.decode_dp) != instance_state::gone &&
        fleet_.state(instance_role::decode, static_cast<int>(g) / cfg_.decode_dp) != instance_state::provisioning)
      dk.push_back(static_cast<float>(dranks_[g].kv_tokens));
  s.decode_rank_kv.push_back(std::move(dk));
  win_input_ = win_hit_ = win_decode_tokens_ = 0;
  win_ttft_.clear();
  // Expired snapshots only cost memory, and expired blocks are answered by CHECK until kv's GC
  // removes them (as in production): collect about twice per snapshot TTL.
  if (q_.now() - swa_collected_ >= cfg_.cache.swa_ttl_s / 2.0) {
    cache_.collect(q_.now());
    swa_collected_ = q_.now();
  }
}

void simulator::autoscale() {
  autoscaler::observation obs;
  obs.now_s = q_.now();
  obs.missed_tok_per_s = static_cast<double>(scale_missed_) / cfg_.autoscale_s;
  double in_flight = 0.0;
  for (const auto& r : dranks_)
    in_flight += static_cast<double>(r.requests);
  obs.requests_in_flight = in_flight + static_cast<double>(decode_waiting_.size());
  // Quota use over the ranks that pull (running instances).
  double quota = 0.0;
  for (const int i : prefill_serving_)
    for (const auto& r : prefill_[static_cast<size_t>(i)].ranks)
      quota += r.quota_load;
  const auto serving_ranks = static_cast<double>(prefill_serving_.size()) * cfg_.prefill_dp;
  obs.quota_use = serving_ranks > 0 ? quota / (cfg_.quota_per_rank_s * serving_ranks) : 1.0;
  obs.queue_time_s = percentile(scale_wait_, 90.0);
  // What the cluster is becoming: instances up or on their way, not those leaving.
  const auto up = [&](instance_role r) {
    return fleet_.count(r, instance_state::running) + fleet_.count(r, instance_state::provisioning);
  };
  obs.prefill = up(instance_role::prefill);
  obs.decode = up(instance_role::decode);
  obs.prefill_starting = fleet_.count(instance_role::prefill, instance_state::provisioning);
  obs.decode_starting = fleet_.count(instance_role::decode, instance_state::provisioning);
  const auto d = scaler_.decide(obs);
  auto& s = res_.series;
  s.autoscale_t.push_back(obs.now_s);
  s.prefill_now.push_back(fleet_.count(instance_role::prefill, instance_state::running));
  s.decode_now.push_back(fleet_.count(instance_role::decode, instance_state::running));
  s.prefill_starting.push_back(fleet_.count(instance_role::prefill, instance_state::provisioning));
  s.decode_starting.push_back(fleet_.count(instance_role::decode, instance_state::provisioning));
  s.prefill_draining.push_back(fleet_.count(instance_role::prefill, instance_state::draining));
  s.decode_draining.push_back(fleet_.count(instance_role::decode, instance_state::draining));
  s.prefill_target.push_back(d.prefill);
  s.decode_target.push_back(d.decode);
  scale_missed_ = 0;
  scale_wait_.clear();
  if (cfg_.autoscale == autoscale_mode::applied)
    apply(d);
}

void simulator::record_peaks() {
  res_.peak_prefill = std::max(res_.peak_prefill, fleet_.count(instance_role::prefill, instance_state::running));
  res_.peak_decode = std::max(res_.peak_decode, fleet_.count(instance_role::decode, instance_state::running));
}

sim_result simulator::run() {
  pull_arrival();
  const bool rounds = cfg_.policy == prefill_policy::quota_buckets;
  const auto finished = [this] { return arrivals_done_ && flights_.empty() && pending_followups_ == 0; };
  // Periodic timers re-arm themselves until everything drained.
  std::function<void()> round_tick = [&] {
    router_.new_round();
    if (!finished())
      q_.push(q_.now() + cfg_.round_s, round_tick);
  };
  std::function<void()> sample_tick = [&] {
    sample();
    if (!finished())
      q_.push(q_.now() + cfg_.sample_s, sample_tick);
  };
  std::function<void()> scale_tick = [&] {
    autoscale();
    if (!finished())
      q_.push(q_.now() + cfg_.autoscale_s, scale_tick);
  };
  if (rounds)
    q_.push(cfg_.round_s, round_tick);
  q_.push(cfg_.sample_s, sample_tick);
  q_.push(cfg_.autoscale_s, scale_tick);
  double next_report = 0.0;
  while (q_.run_one(cfg_.horizon_s)) {
    if (cfg_.progress && q_.now() >= next_report) {
      std::fprintf(stderr, "\r[deepinfer-sim] t=%8.0fs arrived=%ld done=%ld in-flight=%zu   ",
                   q_.now(), static_cast<long>(res_.requests), static_cast<long>(res_.completed), flights_.size());
      next_report = q_.now() + 30.0;
    }
  }
  if (cfg_.progress)
    std::fprintf(stderr, "\n");
  record_peaks();
  const double end = std::max(q_.now(), res_.last_event);
  res_.end_s = end;
  res_.prefill_rank_s = fleet_.rank_seconds(instance_role::prefill, end);
  res_.decode_rank_s = fleet_.rank_seconds(instance_role::decode, end);
  res_.pool_rank_s = fleet_.pool_rank_seconds(end);
  res_.pool_starts = fleet_.pool_starts();
  res_.cold_starts = fleet_.cold_starts();
  return std::move(res_);
}

} // namespace deepinfer::balancers::sim
