#include "kv/gc.hpp"

#include "kv/block_store.hpp"
#include "kv/lru_ttl_policy.hpp"
#include "kv/temp_dir.test.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace deepinfer::kv;

namespace {

constexpr int64_t day_ms = 24LL * 3600 * 1000;

block_key key_of(uint64_t i) {
  return block_key{i + 1, 77};
}

std::vector<std::byte> content(uint64_t i, std::size_t size) {
  std::vector<std::byte> out(size);
  for (std::size_t j = 0; j < size; ++j)
    out[j] = static_cast<std::byte>((i * 131 + j * 7) >> 2);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(gc_suite)

BOOST_AUTO_TEST_CASE(evicts_least_recently_used_from_high_to_low_watermark) {
  auto time = std::make_shared<manual_clock>(0);
  block_catalog catalog;
  check_index index;
  for (uint64_t i = 0; i < 10; ++i) {
    catalog.insert(block_meta{key_of(i), 100, traffic_class::chatbot, time->now_ms()});
    index.insert(key_of(i));
    time->advance(1);
  }
  catalog.touch(key_of(0), time->now_ms()); // 0 becomes the most recent
  const lru_ttl_policy policy;
  gc collector{gc::config{500, 800, time}, catalog, policy, {}, &index};
  BOOST_TEST((collector.state() == watermark_state::above_high));
  const auto report = collector.run_once();
  BOOST_TEST(report.evicted == 5u);
  BOOST_TEST(report.bytes_after == 500u);
  for (uint64_t i : {1, 2, 3, 4, 5}) {
    BOOST_TEST(!catalog.find(key_of(i)));
    BOOST_TEST(!index.contains(key_of(i)));
  }
  BOOST_TEST(catalog.find(key_of(0)).has_value());
  BOOST_TEST((collector.state() == watermark_state::below_low));
  // Between the watermarks nothing is evicted.
  catalog.insert(block_meta{key_of(50), 100, traffic_class::chatbot, time->now_ms()});
  BOOST_TEST((collector.state() == watermark_state::between));
  BOOST_TEST(collector.run_once().evicted == 0u);
}

BOOST_AUTO_TEST_CASE(a_full_disk_evicts_a_tenth_of_the_store_below_the_watermarks) {
  // The disk filled up (other files, the filesystem's rounding) while the store's own bytes are
  // under the low watermark: the watermarks alone would never make room.
  auto time = std::make_shared<manual_clock>(0);
  block_catalog catalog;
  for (uint64_t i = 0; i < 20; ++i) {
    catalog.insert(block_meta{key_of(i), 100, traffic_class::chatbot, time->now_ms()});
    time->advance(1);
  }
  const lru_ttl_policy policy;
  gc collector{gc::config{5000, 8000, time}, catalog, policy};
  BOOST_TEST((collector.state() == watermark_state::below_low));
  BOOST_TEST(collector.run_once().evicted == 0u);
  const auto report = collector.run_once(/*space_pressure=*/true);
  BOOST_TEST(report.evicted == 2u);  // a tenth of 2,000 bytes, least recently used first
  BOOST_TEST(report.bytes_after == 1800u);
  BOOST_TEST(!catalog.find(key_of(0)));
  BOOST_TEST(!catalog.find(key_of(1)));
  BOOST_TEST(catalog.find(key_of(2)).has_value());
  // One block left: pressure still frees it (at least one block).
  block_catalog one;
  one.insert(block_meta{key_of(0), 100, traffic_class::chatbot, 0});
  gc last{gc::config{5000, 8000, time}, one, policy};
  BOOST_TEST(last.run_once(true).evicted == 1u);
}

BOOST_AUTO_TEST_CASE(never_evicts_a_block_a_reader_holds) {
  block_catalog catalog;
  for (uint64_t i = 0; i < 4; ++i)
    catalog.insert(block_meta{key_of(i), 100, traffic_class::chatbot, static_cast<int64_t>(i)});
  auto held = catalog.acquire(key_of(0)); // the LRU victim
  const lru_ttl_policy policy;
  gc collector{gc::config{0, 0, std::make_shared<manual_clock>(10)}, catalog, policy};
  collector.run_once();
  BOOST_TEST(catalog.find(key_of(0)).has_value());
  BOOST_TEST(catalog.size() == 1u);
  held.reset();
  collector.run_once();
  BOOST_TEST(catalog.size() == 0u);
}

BOOST_AUTO_TEST_CASE(write_read_evict_round_trip_on_a_file_store) {
  auto time = std::make_shared<manual_clock>(0);
  testing::temp_dir dir;
  const auto cfg = testing::store_config(dir, "evict", time);
  check_index index;
  auto store = block_store::open(cfg, &index);
  std::vector<block_key> chain;
  for (uint64_t i = 0; i < 8; ++i) {
    chain.push_back(key_of(i));
    store->write(key_of(i), content(i, 1000), traffic_class::chatbot);
    time->advance(1);
  }
  std::vector<std::byte> out(1000);
  for (uint64_t i : {0, 1}) // reads make 0 and 1 the most recently used
    BOOST_TEST((store->read(key_of(i), out).status == read_status::ok));
  const uint64_t block = store->catalog().bytes() / 8;
  const lru_ttl_policy policy;
  gc collector{gc::config{4 * block, 6 * block, time}, store->catalog(), policy, store->remover(), &index};
  BOOST_TEST(collector.run_once().evicted == 4u);
  for (uint64_t i = 0; i < 8; ++i) {
    const bool kept = i < 2 || i >= 6;
    BOOST_TEST(store->exists(key_of(i)) == kept);
    BOOST_TEST(index.contains(key_of(i)) == kept);
    const auto r = store->read(key_of(i), out);
    BOOST_TEST((r.status == (kept ? read_status::ok : read_status::not_found)));
    if (kept)
      BOOST_TEST((out == content(i, 1000)));
  }
  BOOST_TEST(index.longest_prefix(chain).blocks == 2u);
}

BOOST_AUTO_TEST_CASE(ttl_expiry_per_traffic_class) {
  auto time = std::make_shared<manual_clock>(1'000 * day_ms);
  testing::temp_dir dir;
  const auto cfg = testing::store_config(dir, "ttl", time);
  auto store = block_store::open(cfg);
  store->write(key_of(0), content(0, 100), traffic_class::agent);
  store->write(key_of(1), content(1, 100), traffic_class::chatbot);
  store->write(key_of(2), content(2, 100), traffic_class::agent);
  const lru_ttl_policy policy; // agent 3 days, chatbot 7 days
  gc collector{gc::config{0, UINT64_MAX, time}, store->catalog(), policy, store->remover()};
  time->advance(2 * day_ms);
  std::vector<std::byte> out(100);
  BOOST_TEST((store->read(key_of(2), out).status == read_status::ok)); // a use restarts its TTL
  time->advance(day_ms);
  auto report = collector.run_once();
  BOOST_TEST(report.expired == 1u);
  BOOST_TEST(!store->exists(key_of(0)));
  BOOST_TEST(store->exists(key_of(1)));
  BOOST_TEST(store->exists(key_of(2)));
  time->advance(2 * day_ms); // day 5: the refreshed agent block is 3 days old
  BOOST_TEST(collector.run_once().expired == 1u);
  BOOST_TEST(!store->exists(key_of(2)));
  time->advance(2 * day_ms - 1); // day 7 minus 1 ms: chatbot still alive
  BOOST_TEST(collector.run_once().expired == 0u);
  time->advance(1);
  BOOST_TEST(collector.run_once().expired == 1u);
  BOOST_TEST(store->catalog().size() == 0u);
}

BOOST_AUTO_TEST_CASE(concurrent_readers_during_gc_never_read_a_removed_or_torn_block) {
  testing::temp_dir dir;
  const auto cfg = testing::store_config(dir, "gc-race");
  auto store = block_store::open(cfg);
  constexpr uint64_t blocks = 48;
  constexpr std::size_t size = 16 * 1024;
  for (uint64_t i = 0; i < blocks; ++i)
    store->write(key_of(i), content(i, size), traffic_class::chatbot);
  const lru_ttl_policy policy;
  // Watermarks at about a third of the blocks: GC evicts constantly while the writer refills.
  const uint64_t block_bytes = store->catalog().bytes() / blocks;
  gc collector{gc::config{block_bytes * 12, block_bytes * 16, cfg.time}, store->catalog(), policy,
               store->remover()};
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, ok_reads{0}, removed_while_held{0}, leases{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::byte> out(size);
      while (!stop) {
        const uint64_t i = rng() % blocks;
        const auto r = store->read(key_of(i), out);
        if (r.status == read_status::ok) {
          ++ok_reads;
          if (out != content(i, size))
            ++wrong;
        } else if (r.status != read_status::not_found) {
          ++wrong;
        }
        // A held block's file must survive until the lease ends.
        if (auto lease = store->catalog().acquire(key_of(i))) {
          ++leases;
          const bool before = store->exists(key_of(i));
          std::this_thread::yield();
          if (before && !store->exists(key_of(i)))
            ++removed_while_held;
        }
      }
    });
  }
  std::thread writer([&] {
    uint64_t i = 0;
    while (!stop) {
      const uint64_t j = i++ % blocks;
      store->write(key_of(j), content(j, size), traffic_class::chatbot);
    }
  });
  // Run until enough interleaving happened (threads may be starved on a loaded machine); the
  // deadline only bounds a broken run.
  std::size_t evicted = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int pass = 0; (pass < 3000 || ok_reads < 200 || evicted < 100)
                     && std::chrono::steady_clock::now() < deadline;
       ++pass)
    evicted += collector.run_once().evicted;
  stop = true;
  writer.join();
  for (auto& r : readers)
    r.join();
  BOOST_TEST_MESSAGE("evicted=" << evicted << " ok_reads=" << ok_reads << " leases=" << leases);
  BOOST_TEST(evicted >= 100u); // the loop above runs until it is
  BOOST_TEST(ok_reads >= 200);
  BOOST_TEST(wrong == 0);
  BOOST_TEST(removed_while_held == 0);
}

BOOST_AUTO_TEST_CASE(a_reader_in_another_process_never_reads_a_removed_or_torn_block) {
  testing::temp_dir dir;
  const auto cfg = testing::store_config(dir, "gc-cross-process");
  constexpr uint64_t blocks = 32;
  constexpr std::size_t size = 64 * 1024;
  {
    auto store = block_store::open(cfg);
    for (uint64_t i = 0; i < blocks; ++i)
      store->write(key_of(i), content(i, size), traffic_class::chatbot);
  }
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    // Another node's GC and writer on the shared root: remove and rewrite blocks in a loop.
    auto store = block_store::open(cfg);
    for (uint64_t n = 0; n < 1000; ++n) {
      const uint64_t i = n * 7 % blocks;
      if (!store->remove(key_of(i)))
        ::_exit(2);
      if (store->write(key_of(i), content(i, size), traffic_class::chatbot) == write_status::io_error)
        ::_exit(3);
    }
    ::_exit(0);
  }
  auto store = block_store::open(cfg);
  std::vector<std::byte> out(size);
  int ok = 0, missing = 0, wrong = 0, status = 0;
  for (uint64_t n = 0; ::waitpid(child, &status, WNOHANG) == 0; ++n) {
    const uint64_t i = n % blocks;
    const auto r = store->read(key_of(i), out);
    if (r.status == read_status::ok && out == content(i, size))
      ++ok;
    else if (r.status == read_status::not_found)
      ++missing;
    else
      ++wrong;
  }
  BOOST_REQUIRE(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST_MESSAGE("ok=" << ok << " missing=" << missing);
  BOOST_TEST(wrong == 0);
  BOOST_TEST(ok > 0);
}

BOOST_AUTO_TEST_SUITE_END()
