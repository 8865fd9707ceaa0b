#include "kv/block_writer.hpp"

#include "recipe/base/thread_name.hpp"

#include <utility>

#include "recipe/base/assert.hpp"

namespace deepinfer::kv {

block_writer::block_writer(const config& cfg, write_fn write) : cfg_(cfg), write_(std::move(write)) {
  DEEPINFER_ASSERT(static_cast<bool>(write_), "a block writer needs a write function");
  worker_ = std::thread([this] { run(); });
}

block_writer::~block_writer() {
  {
    std::lock_guard guard{mtx_};
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

block_writer::submit_status block_writer::submit(const block_key& key, std::vector<std::byte> payload,
                                                 traffic_class cls) {
  std::unique_lock guard{mtx_};
  if (pending_.count(key) > 0)
    return submit_status::already_pending;
  // One block larger than the whole bound still goes when nothing else is held: refusing it
  // forever would only lose it.
  if (counts_.held_bytes > 0 && counts_.held_bytes + payload.size() > cfg_.max_queued_bytes) {
    ++counts_.refused;
    return submit_status::queue_full;
  }
  counts_.held_bytes += payload.size();
  ++counts_.queued;
  auto bytes = std::make_shared<const std::vector<std::byte>>(std::move(payload));
  pending_.emplace(key, bytes);
  queue_.push_back({key, std::move(bytes), cls});
  guard.unlock();
  wake_.notify_one();
  return submit_status::queued;
}

bool block_writer::pending(const block_key& key) const {
  std::lock_guard guard{mtx_};
  return pending_.count(key) > 0;
}

std::shared_ptr<const std::vector<std::byte>> block_writer::pending_payload(const block_key& key) const {
  std::lock_guard guard{mtx_};
  auto it = pending_.find(key);
  return it == pending_.end() ? nullptr : it->second;
}

void block_writer::flush() {
  std::unique_lock guard{mtx_};
  idle_.wait(guard, [this] { return pending_.empty(); });
}

block_writer::counters block_writer::stats() const {
  std::lock_guard guard{mtx_};
  return counts_;
}

void block_writer::run() {
  name_this_thread("kv.writer");
  for (;;) {
    job j;
    {
      std::unique_lock guard{mtx_};
      wake_.wait(guard, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty())
        return; // stopping, and everything queued is written
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    // No lock during the file work: submitters and readers go on meanwhile.
    write_(j.key, *j.payload, j.cls);
    {
      std::lock_guard guard{mtx_};
      // Pending until here: the write recorded its outcome (the index knows the block) first.
      pending_.erase(j.key);
      counts_.held_bytes -= j.payload->size();
      ++counts_.written;
      if (pending_.empty())
        idle_.notify_all();
    }
  }
}

} // namespace deepinfer::kv
