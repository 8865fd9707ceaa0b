// kv::block_writer (issue 17): blocks are written on its thread in order, a queued block is
// readable from the queue until its write returned, a full queue refuses instead of blocking,
// and the destructor writes what is queued.
#include "kv/block_writer.hpp"

#include <boost/test/unit_test.hpp>

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using deepinfer::kv::block_key;
using deepinfer::kv::block_writer;
using deepinfer::kv::traffic_class;

namespace {

std::vector<std::byte> bytes(std::size_t n, int fill) {
  return std::vector<std::byte>(n, std::byte{static_cast<unsigned char>(fill)});
}

/// A write function that records what it wrote, and on which thread, and can be held shut.
struct recorder {
  std::mutex mtx;
  std::condition_variable cv;
  bool open = true;
  std::vector<block_key> order;
  std::map<block_key, std::vector<std::byte>> written;
  std::map<block_key, traffic_class> classes;
  std::vector<std::thread::id> threads;
  std::vector<std::string> thread_names;

  block_writer::write_fn fn() {
    return [this](const block_key& k, std::span<const std::byte> b, traffic_class cls) {
      std::unique_lock guard{mtx};
      cv.wait(guard, [this] { return open; });
      order.push_back(k);
      written[k].assign(b.begin(), b.end());
      classes[k] = cls;
      threads.push_back(std::this_thread::get_id());
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof name);
      thread_names.emplace_back(name);
    };
  }
  void set_open(bool x) {
    {
      std::lock_guard guard{mtx};
      open = x;
    }
    cv.notify_all();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(kv_block_writer)

BOOST_AUTO_TEST_CASE(writes_every_block_in_order_off_the_submitting_thread) {
  recorder r;
  block_writer w({}, r.fn());
  for (uint64_t i = 0; i < 50; ++i)
    BOOST_TEST((w.submit({i, 7}, bytes(100 + i, static_cast<int>(i)),
                         i % 2 ? traffic_class::agent : traffic_class::chatbot) == block_writer::submit_status::queued));
  w.flush();
  BOOST_REQUIRE(r.order.size() == 50u);
  for (uint64_t i = 0; i < 50; ++i) {
    BOOST_TEST((r.order[i] == block_key{i, 7}));
    BOOST_TEST((r.written[{i, 7}] == bytes(100 + i, static_cast<int>(i))));
    BOOST_TEST((r.classes[{i, 7}] == (i % 2 ? traffic_class::agent : traffic_class::chatbot)));
    BOOST_TEST((r.threads[i] != std::this_thread::get_id()));
    BOOST_TEST(r.thread_names[i] == "kv.writer"); // what top -H and perf show for it
    BOOST_TEST(!w.pending({i, 7}));
  }
  const auto c = w.stats();
  BOOST_TEST(c.queued == 50u);
  BOOST_TEST(c.written == 50u);
  BOOST_TEST(c.held_bytes == 0u);
}

// Between its export and the end of its write a block is readable from the queue, and a second
// submission of the same key (another sample of the same prompt) is not queued again.
BOOST_AUTO_TEST_CASE(a_queued_block_is_pending_with_its_bytes_until_written_and_never_queued_twice) {
  recorder r;
  r.set_open(false);
  block_writer w({}, r.fn());
  const block_key a{1, 1}, b{2, 2};
  BOOST_TEST((w.submit(a, bytes(64, 1), traffic_class::chatbot) == block_writer::submit_status::queued));
  BOOST_TEST((w.submit(b, bytes(32, 2), traffic_class::chatbot) == block_writer::submit_status::queued));
  BOOST_TEST((w.submit(a, bytes(64, 1), traffic_class::chatbot) == block_writer::submit_status::already_pending));
  BOOST_TEST(w.pending(a));
  BOOST_TEST(w.pending(b));
  BOOST_TEST(!w.pending({3, 3}));
  BOOST_REQUIRE(w.pending_payload(a));
  BOOST_TEST((*w.pending_payload(a) == bytes(64, 1)));
  BOOST_TEST(w.pending_payload({3, 3}) == nullptr);
  BOOST_TEST(w.stats().held_bytes == 96u);
  r.set_open(true);
  w.flush();
  BOOST_TEST(!w.pending(a));
  BOOST_TEST(w.pending_payload(a) == nullptr);
  BOOST_TEST(r.order.size() == 2u); // a once
  BOOST_TEST(w.stats().held_bytes == 0u);
}

// A writer that falls behind (a slow disk, fsync) costs hits, never rank time: past its bound
// it refuses, and takes blocks again once the queue drained.
BOOST_AUTO_TEST_CASE(a_full_queue_refuses_without_blocking_and_accepts_again_once_drained) {
  recorder r;
  r.set_open(false);
  block_writer w({3000}, r.fn());
  for (uint64_t i = 0; i < 3; ++i)
    BOOST_TEST((w.submit({i, 0}, bytes(1000, 0), traffic_class::chatbot) == block_writer::submit_status::queued));
  BOOST_TEST((w.submit({9, 0}, bytes(1000, 0), traffic_class::chatbot) == block_writer::submit_status::queue_full));
  BOOST_TEST(!w.pending({9, 0}));
  BOOST_TEST(w.stats().refused == 1u);
  r.set_open(true);
  w.flush();
  BOOST_TEST((w.submit({9, 0}, bytes(1000, 0), traffic_class::chatbot) == block_writer::submit_status::queued));
  w.flush();
  BOOST_TEST(r.order.size() == 4u);
  // One block larger than the whole bound still goes when nothing else is held.
  BOOST_TEST((w.submit({10, 0}, bytes(5000, 0), traffic_class::chatbot) == block_writer::submit_status::queued));
}

BOOST_AUTO_TEST_CASE(the_destructor_writes_what_is_queued) {
  recorder r;
  r.set_open(false);
  std::thread opener;
  {
    block_writer w({}, r.fn());
    for (uint64_t i = 0; i < 5; ++i)
      w.submit({i, 0}, bytes(10, 0), traffic_class::chatbot);
    // Opens the writes while the destructor waits for them.
    opener = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      r.set_open(true);
    });
  }
  opener.join();
  BOOST_TEST(r.order.size() == 5u);
}

BOOST_AUTO_TEST_SUITE_END()
