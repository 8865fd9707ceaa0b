#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace deepinfer::actors {

/// A prefill rank's I/O thread: runs the block fetches of its jobs (the remote SWA snapshot and
/// the prefix cache's block reads into host memory) one after another in the order posted, so
/// the rank's own thread keeps computing other jobs meanwhile. A task reports back by message.
class block_fetcher {
public:
  block_fetcher();
  /// Lets the running task finish, drops the queued ones, joins the thread.
  ~block_fetcher();
  block_fetcher(const block_fetcher&) = delete;
  block_fetcher& operator=(const block_fetcher&) = delete;

  /// Queues `task` behind the ones already posted.
  void post(std::function<void()> task);

private:
  void run();

  std::mutex mtx_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace deepinfer::actors
