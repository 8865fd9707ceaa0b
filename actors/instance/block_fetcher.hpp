#pragma once

#include <functional>
#include <utility>

#include "kv/thread_pool.hpp"

namespace deepinfer::actors {

/// A prefill rank's I/O thread: runs the block fetches of its jobs (the remote SWA snapshot and
/// the prefix cache's block reads into host memory) one after another in the order posted, so
/// the rank's own thread keeps computing other jobs meanwhile. A task reports back by message.
/// One worker of a `kv::thread_pool`; jobs not started when the rank goes are dropped.
class block_fetcher {
public:
  block_fetcher() : worker_(1) {}
  /// Lets the running task finish, drops the queued ones, joins the thread.
  ~block_fetcher() { worker_.discard_queued(); }
  block_fetcher(const block_fetcher&) = delete;
  block_fetcher& operator=(const block_fetcher&) = delete;

  /// Queues `task` behind the ones already posted.
  void post(std::function<void()> task) { worker_.submit(std::move(task)); }

private:
  kv::thread_pool worker_;
};

} // namespace deepinfer::actors
