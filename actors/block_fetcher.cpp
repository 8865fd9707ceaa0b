#include "actors/block_fetcher.hpp"

#include <utility>

namespace deepinfer::actors {

block_fetcher::block_fetcher() : thread_([this] { run(); }) {}

block_fetcher::~block_fetcher() {
  {
    std::lock_guard lock{mtx_};
    stopping_ = true;
    tasks_.clear();
  }
  wake_.notify_one();
  thread_.join();
}

void block_fetcher::post(std::function<void()> task) {
  {
    std::lock_guard lock{mtx_};
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void block_fetcher::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock{mtx_};
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (stopping_)
        return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

} // namespace deepinfer::actors
