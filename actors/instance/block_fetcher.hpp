#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "kv/thread_pool.hpp"

namespace deepinfer::actors {

/// A prefill rank's I/O threads: run the block fetches of its jobs (the remote SWA snapshot, the
/// hit plan, then the prefix cache's block reads into host memory), so the rank's own thread
/// keeps computing other jobs meanwhile. A task reports back by message.
///
/// Two lanes, each one thread in the order posted: plans and block reads. A plan is an index
/// lookup the rank waits for briefly when it takes a job (a short prompt is admitted in that
/// mailbox turn); on one thread it would wait behind an earlier job's read of a long hit (tens of
/// MB), then miss that turn and wait for the rank's next step. A plan task posts its job's reads
/// to the read lane, so a job's reads still follow its plan. Jobs not started when the rank goes
/// are dropped.
class block_fetcher {
public:
  block_fetcher() : planner_(std::make_unique<kv::thread_pool>(1)) {}
  /// Lets the running tasks finish, drops the queued ones, joins both threads.
  ~block_fetcher() {
    closing_ = true; // a plan that ends from now on posts no read
    planner_->discard_queued();
    reader_.discard_queued();
    planner_.reset(); // joined
    reader_.discard_queued();
  }
  block_fetcher(const block_fetcher&) = delete;
  block_fetcher& operator=(const block_fetcher&) = delete;

  /// Queues `task` behind the plans already posted (never behind a block read).
  void plan(std::function<void()> task) { planner_->submit(std::move(task)); }
  /// Queues `task` behind the block reads already posted; may be called from a plan task.
  void read(std::function<void()> task) {
    if (!closing_)
      reader_.submit(std::move(task));
  }

private:
  std::atomic<bool> closing_{false};
  // Declared before the planner: destroyed after it, whose tasks post here.
  kv::thread_pool reader_{1};
  std::unique_ptr<kv::thread_pool> planner_;
};

} // namespace deepinfer::actors
