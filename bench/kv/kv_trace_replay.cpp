// Replays the Mooncake conversation trace through CHECK + the store metadata + GC, at several
// capacities, next to an ideal infinite cache and an ideal LRU of the same capacity.
//
//   bench_kv_trace_replay [--trace PATH] [--capacities 1000,3000,...] (capacities in 512-token blocks)
//
// Each 512-token hash id becomes four derived 128-token blocks (shared/data/README.md §1), so a
// capacity of C 512-blocks is 4C 128-blocks. Requests go in file order; each one: CHECK the
// chain, touch the hit blocks, insert the missed ones, run GC when above the high watermark.
#include "kv/block_catalog.hpp"
#include "kv/check_index.hpp"
#include "kv/clock.hpp"
#include "kv/gc.hpp"
#include "kv/lru_ttl_policy.hpp"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <list>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using namespace deepinfer::kv;

namespace {

struct request {
  int64_t timestamp_ms = 0;
  std::vector<uint64_t> ids;
};

std::vector<request> load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "cannot open trace %s\n", path.c_str());
    std::exit(1);
  }
  std::vector<request> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    const auto j = nlohmann::json::parse(line);
    out.push_back(request{j.at("timestamp").get<int64_t>(), j.at("hash_ids").get<std::vector<uint64_t>>()});
  }
  return out;
}

block_key derived(uint64_t id, uint64_t k) {
  const uint64_t in[2] = {id, k};
  const auto h = XXH3_128bits(in, sizeof(in));
  return block_key{h.low64, h.high64};
}

/// The reference of shared/data/README.md §1 at 512-token granularity.
struct ideal_lru {
  std::size_t capacity;
  std::list<uint64_t> order; // front = most recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> where;

  std::size_t serve(const std::vector<uint64_t>& ids) {
    std::size_t hit = 0;
    while (hit < ids.size() && where.count(ids[hit]))
      ++hit;
    for (auto id : ids) {
      if (auto it = where.find(id); it != where.end()) {
        order.splice(order.begin(), order, it->second);
      } else {
        order.push_front(id);
        where.emplace(id, order.begin());
      }
    }
    while (order.size() > capacity) {
      where.erase(order.back());
      order.pop_back();
    }
    return hit;
  }
};

struct replay_result {
  double hit_ratio = 0;
  double seconds = 0;
  std::size_t gc_runs = 0;
};

/// CHECK + catalog + GC with watermarks [low_fraction * capacity, capacity].
replay_result replay(const std::vector<request>& trace, std::size_t capacity_512, double low_fraction) {
  constexpr uint64_t block_bytes = 112 * 1024;
  auto time = std::make_shared<manual_clock>(0);
  block_catalog catalog;
  check_index index;
  const lru_ttl_policy policy;
  const uint64_t high = capacity_512 * 4 * block_bytes;
  gc collector{gc::config{static_cast<uint64_t>(static_cast<double>(high) * low_fraction), high, time},
               catalog, policy, {}, &index};
  std::size_t hits = 0, total = 0;
  replay_result out;
  std::vector<block_key> chain;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& r : trace) {
    time->set(r.timestamp_ms);
    chain.clear();
    for (auto id : r.ids)
      for (uint64_t k = 0; k < 4; ++k)
        chain.push_back(derived(id, k));
    const auto hit = index.longest_prefix(chain);
    hits += hit.blocks;
    total += chain.size();
    for (std::size_t i = 0; i < chain.size(); ++i) {
      if (i < hit.blocks || !catalog.insert(block_meta{chain[i], block_bytes, traffic_class::chatbot, r.timestamp_ms}))
        catalog.touch(chain[i], r.timestamp_ms);
      else
        index.insert(chain[i]);
    }
    if (collector.state() == watermark_state::above_high) {
      collector.run_once();
      ++out.gc_runs;
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.hit_ratio = static_cast<double>(hits) / static_cast<double>(total);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string trace_path = DEEPINFER_SOURCE_DIR "/../shared/data/mooncake/conversation_trace.jsonl";
  std::vector<std::size_t> capacities = {1000, 3000, 10000, 30000, 100000};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--trace") {
      trace_path = argv[i + 1];
    } else if (flag == "--capacities") {
      capacities.clear();
      std::stringstream list(argv[i + 1]);
      std::string item;
      while (std::getline(list, item, ','))
        capacities.push_back(std::stoull(item));
    }
  }
  const auto trace = load(trace_path);
  std::size_t total_512 = 0, infinite_hits = 0;
  {
    std::unordered_set<uint64_t> seen;
    for (const auto& r : trace) {
      std::size_t hit = 0;
      while (hit < r.ids.size() && seen.count(r.ids[hit]))
        ++hit;
      infinite_hits += hit;
      total_512 += r.ids.size();
      seen.insert(r.ids.begin(), r.ids.end());
    }
  }
  const double infinite = static_cast<double>(infinite_hits) / static_cast<double>(total_512);
  std::printf("trace %s: %zu requests, %zu 512-blocks (%zu 128-blocks)\n", trace_path.c_str(),
              trace.size(), total_512, total_512 * 4);
  std::printf("%-10s %-10s %-9s %-9s %-12s %-9s %-12s %-8s %-10s\n", "cap(512)", "cap(128)", "infinite",
              "idealLRU", "kv(lo=hi)", "delta", "kv(lo=.98)", "delta", "replay_s");
  for (auto cap : capacities) {
    ideal_lru lru{cap, {}, {}};
    std::size_t hits = 0;
    for (const auto& r : trace)
      hits += lru.serve(r.ids);
    const double ideal = static_cast<double>(hits) / static_cast<double>(total_512);
    const auto exact = replay(trace, cap, 1.0);
    const auto slack = replay(trace, cap, 0.98);
    std::printf("%-10zu %-10zu %-9.4f %-9.4f %-12.4f %+-9.4f %-12.4f %+-8.4f %-10.2f\n", cap, cap * 4,
                infinite, ideal, exact.hit_ratio, (exact.hit_ratio - ideal) * 100, slack.hit_ratio,
                (slack.hit_ratio - ideal) * 100, exact.seconds);
  }
  std::printf("delta columns are percentage points vs the ideal LRU; replay_s is the lo=hi run "
              "(CHECK + catalog + GC for the whole trace)\n");
  return 0;
}
