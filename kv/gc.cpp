#include "kv/gc.hpp"

#include "kv/log.hpp"

#include <algorithm>
#include <vector>

namespace deepinfer::kv {

gc::gc(const config& cfg, block_catalog& catalog, const eviction_policy& policy, remover remove,
       check_index* index)
  : cfg_(cfg), catalog_(catalog), policy_(policy), remove_(std::move(remove)), index_(index) {
  // nop
}

watermark_state gc::state() const {
  const auto bytes = catalog_.bytes();
  if (bytes > cfg_.high_watermark_bytes)
    return watermark_state::above_high;
  if (bytes > cfg_.low_watermark_bytes)
    return watermark_state::between;
  return watermark_state::below_low;
}

bool gc::remove(const block_key& key) {
  if (!catalog_.begin_remove(key))
    return false;
  if (index_ != nullptr)
    index_->erase(key);
  const bool gone = !remove_ || remove_(key);
  if (!gone && index_ != nullptr)
    index_->insert(key);
  catalog_.end_remove(key, gone);
  return gone;
}

gc_report gc::run_once(bool space_pressure) {
  gc_report report;
  const auto before = catalog_.bytes();
  std::vector<block_key> victims;
  // 1. Expired blocks go whatever the watermark.
  policy_.expired(catalog_, cfg_.time->now_ms(), victims);
  for (const auto& key : victims) {
    if (remove(key))
      ++report.expired;
    else
      ++report.skipped_held;
  }
  // 2. Above the high watermark, evict down to the low one; under space pressure, to 90 % of
  // what is stored now. A victim pinned between proposal and removal is skipped, so ask again
  // until the target is met or nothing is left to propose.
  uint64_t target = state() == watermark_state::above_high ? cfg_.low_watermark_bytes : catalog_.bytes();
  if (space_pressure && catalog_.bytes() > 0)
    target = std::min(target, catalog_.bytes() - std::max<uint64_t>(catalog_.bytes() / 10, 1));
  if (target < catalog_.bytes()) {
    for (int round = 0; round < 4 && catalog_.bytes() > target; ++round) {
      victims.clear();
      policy_.victims(catalog_, catalog_.bytes() - target, victims);
      if (victims.empty())
        break;
      for (const auto& key : victims) {
        if (remove(key))
          ++report.evicted;
        else
          ++report.skipped_held;
      }
    }
  }
  report.bytes_after = catalog_.bytes();
  report.bytes_freed = before > report.bytes_after ? before - report.bytes_after : 0;
  if (report.expired + report.evicted > 0)
    log().debug("gc expired={} evicted={} skipped_held={} bytes_after={}", report.expired,
                report.evicted, report.skipped_held, report.bytes_after);
  return report;
}

} // namespace deepinfer::kv
