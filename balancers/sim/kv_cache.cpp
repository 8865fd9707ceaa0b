#include "balancers/sim/kv_cache.hpp"

#include <algorithm>
#include <cmath>

namespace deepinfer::balancers::sim {

namespace {

int64_t to_ms(double s) {
  return static_cast<int64_t>(std::llround(s * 1000.0));
}

kv::lru_ttl_policy::config policy_config(const kv_cache::config& cfg) {
  kv::lru_ttl_policy::config p;
  p.ttl.agent_ms = to_ms(cfg.ttl_s);
  return p;
}

} // namespace

kv_cache::kv_cache(const config& cfg)
    : cfg_(cfg), clock_(std::make_shared<kv::manual_clock>(0)), policy_(policy_config(cfg)),
      gc_(kv::gc::config{static_cast<uint64_t>(cfg.capacity_blocks - cfg.capacity_blocks / 10),
                         static_cast<uint64_t>(cfg.capacity_blocks), clock_},
          catalog_, policy_, {}, &index_),
      swa_(kv::swa_store::config{to_ms(cfg.swa_ttl_s), UINT64_MAX, clock_}) {}

int64_t kv_cache::at(double now) {
  const int64_t ms = to_ms(now);
  clock_->set(ms);
  return ms;
}

int64_t kv_cache::match(std::span<const uint64_t> chain, double now) {
  const int64_t ms = at(now);
  keys_.clear();
  for (const uint64_t id : chain)
    keys_.push_back(key_of(id));
  const auto hit = index_.longest_prefix(keys_);
  for (std::size_t i = 0; i < hit.blocks; ++i)
    catalog_.touch(keys_[i], ms);
  return static_cast<int64_t>(hit.blocks);
}

void kv_cache::insert(std::span<const uint64_t> chain, double now, std::size_t known) {
  const int64_t ms = at(now);
  for (std::size_t i = std::min(known, chain.size()); i < chain.size(); ++i) {
    const auto key = key_of(chain[i]);
    if (index_.contains(key))
      continue; // stored already (the live cache does not write a block twice)
    catalog_.insert(kv::block_meta{key, 1, kv::traffic_class::agent, ms});
    index_.insert(key);
  }
  if (gc_.state() == kv::watermark_state::above_high)
    gc_.run_once();
}

void kv_cache::put_snapshot(uint64_t key, double now) {
  at(now);
  swa_.put(key_of(key), {});
}

bool kv_cache::has_snapshot(uint64_t key, double now) {
  at(now);
  return swa_.contains(key_of(key));
}

void kv_cache::collect(double now) {
  at(now);
  gc_.run_once();
  swa_.expire();
}

} // namespace deepinfer::balancers::sim
