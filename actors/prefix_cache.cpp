#include "actors/prefix_cache.hpp"

#include "kv/block_store.hpp"
#include "kv/check_index.hpp"
#include "kv/hash_chain.hpp"
#include "kv/hit_policy.hpp"

namespace deepinfer::actors {

struct prefix_cache::impl {
  std::unique_ptr<kv::block_store> store;
  std::unique_ptr<kv::check_index> index;
  std::optional<kv::hash_chain> chain;
  kv::hit_policy policy;
};

prefix_cache::prefix_cache(std::unique_ptr<impl> d) : d_(std::move(d)) {}

prefix_cache::~prefix_cache() = default;

std::shared_ptr<prefix_cache> prefix_cache::open(const config& cfg, std::string* error) {
  auto d = std::make_unique<impl>();
  auto fp = kv::model_fingerprint::of(cfg.fingerprint);
  kv::block_store::config sc;
  sc.root = cfg.root;
  sc.fingerprint = fp;
  sc.fsync = kv::fsync_policy::none;  // the cache is a cache: a power loss only costs hits
  sc.io_threads = 1;
  d->store = kv::block_store::open(sc);
  if (!d->store) {
    *error = "cannot open the KV block store at " + cfg.root;
    return nullptr;
  }
  auto* store = d->store.get();
  d->index = std::make_unique<kv::check_index>([store](const kv::block_key& k) { return store->exists(k); });
  d->chain.emplace(fp);
  return std::shared_ptr<prefix_cache>(new prefix_cache(std::move(d)));
}

prefix_cache::hit prefix_cache::lookup(std::span<const int32_t> prompt) {
  hit out;
  auto keys = d_->chain->keys(prompt);
  auto found = d_->index->longest_prefix(keys);
  auto l1 = d_->policy.reusable_length(prompt.size(), found.blocks);
  auto n = l1 / kv::block_tokens;
  for (std::size_t i = 0; i < n; ++i) {
    auto size = d_->store->payload_size(keys[i]);
    if (!size)
      break;
    std::vector<std::byte> buf(*size);
    auto r = d_->store->read(keys[i], buf);
    if (r.status != kv::read_status::ok) {
      d_->index->erase(keys[i]);
      break;
    }
    out.blocks.push_back(std::move(buf));
  }
  out.length = static_cast<int64_t>(out.blocks.size() * kv::block_tokens);
  return out;
}

int64_t prefix_cache::check(std::span<const int32_t> prompt) {
  auto keys = d_->chain->keys(prompt);
  auto found = d_->index->longest_prefix(keys);
  return static_cast<int64_t>(d_->policy.reusable_length(prompt.size(), found.blocks));
}

std::optional<std::pair<uint64_t, uint64_t>> prefix_cache::key_at(std::span<const int32_t> tokens,
                                                                  int64_t end) const {
  if (end <= 0 || end % static_cast<int64_t>(kv::block_tokens) != 0 || end > static_cast<int64_t>(tokens.size()))
    return std::nullopt;
  auto keys = d_->chain->keys(tokens.first(static_cast<std::size_t>(end)));
  auto& k = keys.back();
  return std::pair{k.lo, k.hi};
}

int64_t prefix_cache::store(std::span<const int32_t> tokens, int64_t full_blocks, const export_fn& export_block) {
  auto keys = d_->chain->keys(tokens);
  int64_t written = 0;
  for (int64_t i = 0; i < full_blocks && i < static_cast<int64_t>(keys.size()); ++i) {
    auto& k = keys[static_cast<std::size_t>(i)];
    if (d_->index->contains(k))
      continue;
    auto bytes = export_block(i);
    if (!bytes)
      break;
    auto st = d_->store->write(k, *bytes, kv::traffic_class::chatbot);
    if (st == kv::write_status::io_error)
      break;
    d_->index->insert(k);
    written += st == kv::write_status::written ? 1 : 0;
  }
  return written;
}

} // namespace deepinfer::actors
