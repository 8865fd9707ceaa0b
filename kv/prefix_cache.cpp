#include "kv/prefix_cache.hpp"

#include <algorithm>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "kv/log.hpp"
#include "kv/block_store.hpp"
#include "kv/block_writer.hpp"
#include "kv/check_index.hpp"
#include "kv/hash_chain.hpp"
#include "kv/hit_policy.hpp"
#include "kv/lru_ttl_policy.hpp"

namespace deepinfer::kv {

struct prefix_cache::impl {
  // The index first: the store's scan at open fills it, and it outlives the store.
  std::unique_ptr<kv::check_index> index;
  std::unique_ptr<kv::block_store> store;
  kv::lru_ttl_policy policy_ttl;
  std::optional<kv::gc> collector;
  std::mutex gc_mtx;
  std::optional<kv::hash_chain> chain;
  kv::hit_policy policy;
  std::unique_ptr<kv::swa_store> snapshots;
  std::mutex source_mtx;
  snapshot_source remote;
  snapshot_listener listener;
  std::mutex spare_mtx;
  std::vector<std::vector<std::byte>> spare;
  /// Declared last: destroyed first, writing what is queued while the store and index exist.
  std::unique_ptr<kv::block_writer> writer;

  /// Leading blocks of `keys` that are stored (CHECK, with its probe) or queued for writing.
  std::size_t stored_prefix(std::span<const kv::block_key> keys) {
    std::size_t b = 0;
    for (;;) {
      b += index->longest_prefix(keys.subspan(b)).blocks;
      // A queued block continues the run: the blocks after it may be stored already (another
      // sequence with this prefix wrote its own later blocks).
      if (b < keys.size() && writer->pending(keys[b]))
        ++b;
      else
        return b;
    }
  }

  /// A buffer of `size` bytes: a recycled one when there is (no zero-fill), else a new one.
  std::vector<std::byte> buffer(std::size_t size) {
    std::vector<std::byte> b;
    {
      std::lock_guard guard{spare_mtx};
      if (!spare.empty()) {
        b = std::move(spare.back());
        spare.pop_back();
      }
    }
    if (b.size() != size)
      b.resize(size);
    return b;
  }

  /// The snapshot ending at `key`: local memory first, then the remote source.
  kv::swa_snapshot find_snapshot(const kv::block_key& key) {
    if (auto s = snapshots->get(key))
      return s;
    snapshot_source src;
    {
      std::lock_guard guard{source_mtx};
      src = remote;
    }
    return src ? src(key) : nullptr;
  }
};

prefix_cache::prefix_cache(std::unique_ptr<impl> d) : d_(std::move(d)) {}

prefix_cache::~prefix_cache() = default;

std::shared_ptr<prefix_cache> prefix_cache::open(const config& cfg, std::string* error) {
  auto d = std::make_unique<impl>();
  auto fp = kv::model_fingerprint::of(cfg.fingerprint);
  kv::block_store::config sc;
  sc.root = cfg.root;
  sc.fingerprint = fp;
  // Without fsync a power loss only costs hits: the cache is a cache ([kv] fsync to change it).
  sc.fsync = cfg.fsync ? kv::fsync_policy::file : kv::fsync_policy::none;
  sc.io_threads = cfg.io_threads;
  sc.backend = cfg.use_io_uring ? kv::io_backend::uring : kv::io_backend::thread_pool;
  sc.time = cfg.time;
  // CHECK's index, rebuilt from the store's scan at open; a miss is revalidated against the files.
  auto* slot = &d->store;
  d->index = std::make_unique<kv::check_index>([slot](const kv::block_key& k) { return *slot && (*slot)->exists(k); });
  d->store = kv::block_store::open(sc, d->index.get());
  if (!d->store) {
    *error = "cannot open the KV block store at " + cfg.root;
    return nullptr;
  }
  d->policy_ttl = kv::lru_ttl_policy{kv::lru_ttl_policy::config{cfg.ttl}};
  kv::gc::config gc;
  gc.low_watermark_bytes = std::min(cfg.gc_low_watermark_bytes, cfg.gc_high_watermark_bytes);
  gc.high_watermark_bytes = cfg.gc_high_watermark_bytes;
  gc.time = cfg.time;
  d->collector.emplace(gc, d->store->catalog(), d->policy_ttl, d->store->remover(), d->index.get());
  d->chain.emplace(fp);
  kv::swa_store::config wc;
  wc.ttl_ms = cfg.snapshot_ttl_ms;
  wc.memory_cap_bytes = cfg.snapshot_memory_cap;
  d->snapshots = std::make_unique<kv::swa_store>(wc);
  // The writer records each outcome before its block stops being pending: a reader finds the
  // block queued or indexed, never neither (unless the write failed).
  d->writer = std::make_unique<kv::block_writer>(
    kv::block_writer::config{cfg.write_queue_bytes},
    [store = d->store.get(), index = d->index.get()](const kv::block_key& k, std::span<const std::byte> bytes,
                                                     kv::traffic_class cls) {
      if (store->write(k, bytes, cls) != kv::write_status::io_error)
        index->insert(k);
    });
  return std::shared_ptr<prefix_cache>(new prefix_cache(std::move(d)));
}

void prefix_cache::set_snapshot_source(snapshot_source source) {
  std::lock_guard guard{d_->source_mtx};
  d_->remote = std::move(source);
}

prefix_cache::hit_plan prefix_cache::plan(std::span<const int32_t> prompt, int64_t cap_length, kv::cache_salt salt,
                                         std::span<const image_mark> images) {
  hit_plan out;
  auto keys = d_->chain->salted(salt).with_images(images).keys(prompt);
  const auto found = d_->stored_prefix(keys);
  kv::swa_snapshot snap;
  const auto length = cap_length > 0 ? std::min(static_cast<std::size_t>(cap_length), prompt.size()) : prompt.size();
  auto decision = d_->policy.decide(length, found, [&](std::size_t l1) {
    snap = d_->find_snapshot(keys[l1 / kv::block_tokens - 1]);
    return snap != nullptr;
  });
  // Replay reuses the last block's KV too: the engine gets every block up to L1 either way.
  auto wanted = decision.blocks_of(keys);
  out.keys.assign(wanted.begin(), wanted.end());
  out.length = static_cast<int64_t>(out.keys.size() * kv::block_tokens);
  if (decision.swa == kv::swa_mode::exact)
    out.snapshot = std::move(snap);
  return out;
}

std::vector<std::vector<std::byte>> prefix_cache::read(const hit_plan& plan) {
  const auto& wanted = plan.keys;
  const std::size_t n = wanted.size();
  // Every read in flight at once (the store's I/O threads or io_uring); the caller waits for all.
  std::vector<std::vector<std::byte>> bufs(n);
  std::vector<kv::read_status> status(n, kv::read_status::not_found);
  std::mutex mtx;
  std::condition_variable cv;
  std::size_t pending = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // A block still queued for writing: its bytes are the payload its file will hold.
    if (auto queued = d_->writer->pending_payload(wanted[i])) {
      bufs[i] = d_->buffer(queued->size());
      std::copy(queued->begin(), queued->end(), bufs[i].begin());
      status[i] = kv::read_status::ok;
      continue;
    }
    auto size = d_->store->payload_size(wanted[i]);
    if (!size)
      break;
    bufs[i] = d_->buffer(*size);
    {
      std::lock_guard guard{mtx};
      ++pending;
    }
    d_->store->read_async(wanted[i], bufs[i], [&, i](kv::read_result r) {
      std::lock_guard guard{mtx};
      status[i] = r.status;
      if (--pending == 0)
        cv.notify_one();
    });
  }
  {
    std::unique_lock lock{mtx};
    cv.wait(lock, [&] { return pending == 0; });
  }
  std::vector<std::vector<std::byte>> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (status[i] != kv::read_status::ok) {
      if (!bufs[i].empty()) // read and failed: the index was stale
        d_->index->erase(wanted[i]);
      break;
    }
    out.push_back(std::move(bufs[i]));
  }
  return out;
}

prefix_cache::hit prefix_cache::lookup(std::span<const int32_t> prompt, kv::cache_salt salt,
                                         std::span<const image_mark> images) {
  const auto t0 = std::chrono::steady_clock::now();
  auto p = plan(prompt, 0, salt, images);
  hit out;
  out.blocks = read(p);
  out.length = static_cast<int64_t>(out.blocks.size() * kv::block_tokens);
  if (out.length == p.length)
    out.snapshot = std::move(p.snapshot);
  log().debug("prefix cache lookup tokens={} hit={} snapshot={} took={}us", prompt.size(),
              out.length, out.snapshot != nullptr,
              std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
  return out;
}

void prefix_cache::recycle(std::vector<std::vector<std::byte>> blocks) {
  std::lock_guard guard{d_->spare_mtx};
  for (auto& b : blocks)
    if (d_->spare.size() < spare_limit && !b.empty())
      d_->spare.push_back(std::move(b));
}

void prefix_cache::reserve(std::size_t count, std::size_t bytes) {
  std::lock_guard guard{d_->spare_mtx};
  while (d_->spare.size() < std::min(count, spare_limit))
    d_->spare.emplace_back(bytes); // value-initialized: every page touched now
}

prefix_cache::check_result prefix_cache::check(std::span<const int32_t> prompt, int64_t cap_length,
                                                kv::cache_salt salt, std::span<const image_mark> images) {
  auto keys = d_->chain->salted(salt).with_images(images).keys(prompt);
  const auto found = d_->stored_prefix(keys);
  check_result out;
  const auto length = cap_length > 0 ? std::min(static_cast<std::size_t>(cap_length), prompt.size()) : prompt.size();
  out.length = static_cast<int64_t>(d_->policy.reusable_length(length, found));
  if (auto n = static_cast<std::size_t>(out.length) / kv::block_tokens; n > 0)
    out.key = keys[n - 1];
  return out;
}

std::optional<block_key> prefix_cache::key_at(std::span<const int32_t> tokens, int64_t end,
                                              kv::cache_salt salt, std::span<const image_mark> images) const {
  if (end <= 0 || end % static_cast<int64_t>(kv::block_tokens) != 0 || end > static_cast<int64_t>(tokens.size()))
    return std::nullopt;
  auto keys = d_->chain->salted(salt).with_images(images).keys(tokens.first(static_cast<std::size_t>(end)));
  return keys.back();
}

kv::gc_report prefix_cache::run_gc() {
  std::lock_guard guard{d_->gc_mtx};
  return d_->collector->run_once(d_->store->take_space_pressure());
}

uint64_t prefix_cache::failed_writes() { return d_->store->failed_writes(); }

bool prefix_cache::space_pressure() const { return d_->store->space_pressure(); }

uint64_t prefix_cache::stored_bytes() { return d_->store->catalog().bytes(); }

int64_t prefix_cache::store(std::span<const int32_t> tokens, int64_t full_blocks, const export_fn& export_block,
                            kv::cache_salt salt, kv::traffic_class cls, std::span<const image_mark> images) {
  auto keys = d_->chain->salted(salt).with_images(images).keys(tokens);
  int64_t written = 0;
  for (int64_t i = 0; i < full_blocks && i < static_cast<int64_t>(keys.size()); ++i) {
    auto& k = keys[static_cast<std::size_t>(i)];
    if (d_->index->contains(k) || d_->writer->pending(k))
      continue;
    auto bytes = export_block(i);
    if (!bytes)
      break;
    auto st = d_->store->write(k, *bytes, cls);
    if (st == kv::write_status::io_error)
      break;
    d_->index->insert(k);
    written += st == kv::write_status::written ? 1 : 0;
  }
  return written;
}

int64_t prefix_cache::store_async(std::span<const int32_t> tokens, int64_t from, int64_t full_blocks,
                                  const export_fn& export_block, kv::cache_salt salt, kv::traffic_class cls,
                                  std::span<const image_mark> images) {
  const auto block = static_cast<int64_t>(kv::block_tokens);
  full_blocks = std::min(full_blocks, static_cast<int64_t>(tokens.size()) / block);
  if (from >= full_blocks)
    return std::max(from, full_blocks);
  auto keys = d_->chain->salted(salt).with_images(images).keys(tokens.first(static_cast<std::size_t>(full_blocks * block)));
  auto i = std::max<int64_t>(from, 0);
  // 1. From the start, skip what CHECK finds (the prompt's hit, blocks other nodes wrote): their
  // export would be a copy for nothing.
  if (i == 0)
    i = static_cast<int64_t>(d_->stored_prefix(keys));
  // 2. Export and queue the rest, in order; a block stored or queued meanwhile (another sample of
  // the same prompt, another request with this prefix) is skipped, as `store` skips it.
  for (; i < full_blocks; ++i) {
    const auto& k = keys[static_cast<std::size_t>(i)];
    if (d_->index->contains(k) || d_->writer->pending(k))
      continue;
    auto bytes = export_block(i);
    if (!bytes)
      return i;
    if (d_->writer->submit(k, std::move(*bytes), cls) == kv::block_writer::submit_status::queue_full) {
      log().debug("block write queue full: block {} of {} waits", i, full_blocks);
      return i;
    }
  }
  return full_blocks;
}

void prefix_cache::flush_writes() { d_->writer->flush(); }

prefix_cache::write_counts prefix_cache::writes() const {
  const auto c = d_->writer->stats();
  return {c.queued, c.written, c.refused};
}

bool prefix_cache::store_snapshot(std::span<const int32_t> tokens, int64_t end,
                                  std::vector<std::byte> snapshot, kv::cache_salt salt,
                                  std::span<const image_mark> images) {
  const auto block = static_cast<int64_t>(kv::block_tokens);
  if (end <= 0 || end % block != 0 || end > static_cast<int64_t>(tokens.size()))
    return false;
  auto keys = d_->chain->salted(salt).with_images(images).keys(tokens.first(static_cast<std::size_t>(end)));
  if (!d_->snapshots->put(keys.back(), std::move(snapshot)))
    return false;
  snapshot_listener listener;
  {
    std::lock_guard guard{d_->source_mtx};
    listener = d_->listener;
  }
  if (listener)
    listener(keys.back());
  return true;
}

kv::swa_snapshot prefix_cache::local_snapshot(const kv::block_key& key) const {
  return d_->snapshots->get(key);
}

void prefix_cache::set_snapshot_listener(snapshot_listener listener) {
  std::lock_guard guard{d_->source_mtx};
  d_->listener = std::move(listener);
}

std::size_t prefix_cache::snapshots() const {
  return d_->snapshots->size();
}

} // namespace deepinfer::kv
