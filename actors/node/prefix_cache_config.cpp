#include "actors/node/prefix_cache_config.hpp"

#include <cstdint>
#include <filesystem>
#include <limits>

#include "engine/model/model_config.hpp"

namespace deepinfer::actors {

namespace {

/// The KV store's disk budget: `[kv] disk_budget_gib`, or the filesystem's size when 0.
uint64_t kv_budget_bytes(const serving_config& sc) {
  if (sc.kv_disk_budget_bytes > 0)
    return sc.kv_disk_budget_bytes;
  std::error_code ec;
  std::filesystem::create_directories(sc.kv_root, ec);
  auto space = std::filesystem::space(sc.kv_root, ec);
  return ec ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(space.capacity);
}

} // namespace

expected<kv::prefix_cache::config, std::string> prefix_cache_config_of(const serving_config& sc) {
  auto mc = engine::load_config_file(sc.model_dir + "/config.json");
  if (!mc.config)
    return "cannot read the model config: " + mc.error;
  kv::prefix_cache::config pc;
  pc.root = sc.kv_root;
  pc.fingerprint = mc.config->fingerprint;
  pc.snapshot_ttl_ms = sc.snapshot_ttl.count();
  pc.snapshot_memory_cap = sc.swa_memory_bytes;
  pc.fsync = sc.kv_fsync;
  pc.write_queue_bytes = static_cast<std::size_t>(sc.kv_write_queue_bytes);
  pc.ttl = {sc.kv_ttl_agent.count(), sc.kv_ttl_chatbot.count()};
  const auto budget = kv_budget_bytes(sc);
  pc.gc_high_watermark_bytes = static_cast<uint64_t>(static_cast<double>(budget) * sc.kv_gc_high_watermark);
  pc.gc_low_watermark_bytes = static_cast<uint64_t>(static_cast<double>(budget) * sc.kv_gc_low_watermark);
  return pc;
}

} // namespace deepinfer::actors
