#include "kv/block_store.hpp"

#include "kv/block_header.hpp"
#include "kv/temp_dir.test.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <fstream>
#include <future>

#include <sys/wait.h>
#include <unistd.h>

#ifdef DEEPINFER_HAVE_URING
#include <liburing.h>
#endif

using namespace deepinfer::kv;
namespace utf = boost::unit_test;

namespace {

std::vector<std::byte> payload_for(const block_key& key, std::size_t size) {
  std::vector<std::byte> out(size);
  uint64_t x = key.lo ^ size;
  for (auto& b : out) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    b = static_cast<std::byte>(x >> 56);
  }
  return out;
}

block_key key_of(uint64_t i) {
  return block_key{i * 0x9E3779B97F4A7C15ULL + 1, i};
}

/// Writes 16 blocks through the asynchronous API and reads them back, plus one missing key.
void async_round_trip(block_store& store) {
  constexpr int n = 16;
  std::vector<std::vector<std::byte>> data(n), out(n);
  std::vector<std::promise<write_status>> written(n);
  for (int i = 0; i < n; ++i) {
    data[i] = payload_for(key_of(100 + i), 20'000 + i);
    store.write_async(key_of(100 + i), data[i], traffic_class::agent,
                      [&, i](write_status s) { written[i].set_value(s); });
  }
  for (int i = 0; i < n; ++i)
    BOOST_TEST((written[i].get_future().get() != write_status::io_error));
  std::vector<std::promise<read_result>> read(n + 1);
  for (int i = 0; i < n; ++i) {
    out[i].resize(32'000);
    store.read_async(key_of(100 + i), out[i], [&, i](read_result r) { read[i].set_value(r); });
  }
  std::vector<std::byte> missing(10);
  store.read_async(key_of(999), missing, [&](read_result r) { read[n].set_value(r); });
  for (int i = 0; i < n; ++i) {
    const auto r = read[i].get_future().get();
    BOOST_TEST((r.status == read_status::ok));
    BOOST_TEST(r.bytes == data[i].size());
    BOOST_TEST(std::equal(data[i].begin(), data[i].end(), out[i].begin()));
  }
  BOOST_TEST((read[n].get_future().get().status == read_status::not_found));
}

/// Precondition: this build has the io_uring backend and the kernel lets the process use it.
boost::test_tools::assertion_result io_uring_usable(utf::test_unit_id) {
#ifdef DEEPINFER_HAVE_URING
  io_uring ring{};
  const int rc = io_uring_queue_init(2, &ring, 0);
  boost::test_tools::assertion_result r(rc == 0);
  if (rc == 0)
    io_uring_queue_exit(&ring);
  else
    r.message() << "the kernel refuses io_uring (io_uring_queue_init: " << std::strerror(-rc)
                << "; a container's seccomp profile?), so the io_uring backend was not exercised";
  return r;
#else
  boost::test_tools::assertion_result r(false);
  r.message() << "built without liburing (liburing-dev missing at configure), so the io_uring "
                 "backend was not exercised";
  return r;
#endif
}

struct fixture {
  testing::temp_dir dir;
  std::shared_ptr<manual_clock> time = std::make_shared<manual_clock>(1'700'000'000'000);

  block_store::config cfg(io_backend backend = io_backend::automatic) const {
    auto c = testing::store_config(dir, "store-test", time);
    c.backend = backend;
    c.io_threads = 2;
    return c;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(block_store_suite, fixture)

BOOST_AUTO_TEST_CASE(write_read_remove_round_trip) {
  auto store = block_store::open(cfg());
  BOOST_REQUIRE(store);
  const auto key = key_of(1);
  const auto data = payload_for(key, 112 * 1024);
  BOOST_TEST((store->write(key, data, traffic_class::agent) == write_status::written));
  BOOST_TEST((store->write(key, data, traffic_class::agent) == write_status::exists));
  BOOST_TEST(store->exists(key));
  BOOST_TEST(store->payload_size(key).value() == data.size());
  std::vector<std::byte> out(data.size());
  auto r = store->read(key, out);
  BOOST_TEST((r.status == read_status::ok));
  BOOST_TEST(r.bytes == data.size());
  BOOST_TEST((out == data));
  std::vector<std::byte> small(10);
  r = store->read(key, small);
  BOOST_TEST((r.status == read_status::buffer_too_small));
  BOOST_TEST(r.bytes == data.size());
  BOOST_TEST((store->read(key_of(2), out).status == read_status::not_found));
  BOOST_TEST(store->catalog().bytes() == block_header::size + data.size());
  BOOST_TEST(store->remove(key));
  BOOST_TEST(!store->exists(key));
  BOOST_TEST((store->read(key, out).status == read_status::not_found));
  BOOST_TEST(store->catalog().size() == 0u);
}

BOOST_AUTO_TEST_CASE(reopen_finds_blocks_with_class_and_lru_order) {
  {
    auto store = block_store::open(cfg());
    for (uint64_t i = 0; i < 3; ++i) {
      store->write(key_of(i), payload_for(key_of(i), 1000 + i), i == 1 ? traffic_class::agent : traffic_class::chatbot);
      time->advance(1000);
    }
  }
  auto store = block_store::open(cfg());
  BOOST_TEST(store->scan().blocks == 3u);
  BOOST_TEST((store->catalog().find(key_of(1))->cls == traffic_class::agent));
  std::vector<block_key> order;
  store->catalog().for_each_lru([&](const block_meta& m, bool) {
    order.push_back(m.key);
    return true;
  });
  BOOST_TEST((order == std::vector<block_key>{key_of(0), key_of(1), key_of(2)}));
  // Another model's store on the same root sees nothing.
  auto other_cfg = cfg();
  other_cfg.fingerprint = model_fingerprint::of("another-model");
  BOOST_TEST(block_store::open(other_cfg)->scan().blocks == 0u);
}

BOOST_AUTO_TEST_CASE(a_corrupted_block_never_reads_back_and_is_removed) {
  auto store = block_store::open(cfg());
  const auto a = key_of(1), b = key_of(2);
  const auto data = payload_for(a, 4096);
  store->write(a, data, traffic_class::chatbot);
  store->write(b, payload_for(b, 4096), traffic_class::chatbot);
  {
    std::fstream f(store->path_of(a), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(block_header::size + 100);
    f.put('\x5a' ^ static_cast<char>(data[100]));
  }
  BOOST_TEST(store->verify(false).corrupt == 1u);
  std::vector<std::byte> out(4096);
  BOOST_TEST((store->read(a, out).status == read_status::corrupt));
  BOOST_TEST(!store->exists(a));
  const auto report = store->verify(true);
  BOOST_TEST(report.ok == 1u);
  BOOST_TEST(report.corrupt == 0u);
}

BOOST_AUTO_TEST_CASE(a_truncated_file_under_a_final_name_is_dropped_at_open) {
  const auto key = key_of(9);
  std::filesystem::path path;
  {
    auto store = block_store::open(cfg());
    store->write(key, payload_for(key, 5000), traffic_class::chatbot);
    path = store->path_of(key);
  }
  std::filesystem::resize_file(path, block_header::size + 100);
  auto store = block_store::open(cfg());
  BOOST_TEST(store->scan().bad_removed == 1u);
  std::vector<std::byte> out(5000);
  BOOST_TEST((store->read(key, out).status == read_status::not_found));
}

BOOST_AUTO_TEST_CASE(async_reads_and_writes_on_the_thread_pool) {
  auto store = block_store::open(cfg(io_backend::thread_pool));
  BOOST_TEST((store->backend() == io_backend::thread_pool));
  async_round_trip(*store);
}

BOOST_AUTO_TEST_CASE(async_reads_and_writes_on_io_uring, *utf::precondition(io_uring_usable)) {
  auto store = block_store::open(cfg(io_backend::uring));
  BOOST_REQUIRE((store->backend() == io_backend::uring));
  async_round_trip(*store);
  // Where io_uring works, the default picks it.
  BOOST_TEST((block_store::open(cfg(io_backend::automatic))->backend() == io_backend::uring));
}

BOOST_AUTO_TEST_CASE(an_attached_index_is_rebuilt_at_open_and_follows_writes_and_removals) {
  {
    auto store = block_store::open(cfg());
    store->write(key_of(1), payload_for(key_of(1), 100), traffic_class::chatbot);
    store->write(key_of(2), payload_for(key_of(2), 100), traffic_class::chatbot);
  }
  check_index index;
  auto store = block_store::open(cfg(), &index);
  std::vector<block_key> chain{key_of(1), key_of(2), key_of(3)};
  BOOST_TEST(index.longest_prefix(chain).blocks == 2u);
  store->write(key_of(3), payload_for(key_of(3), 100), traffic_class::chatbot);
  BOOST_TEST(index.longest_prefix(chain).blocks == 3u);
  BOOST_TEST(store->remove(key_of(2)));
  BOOST_TEST(index.longest_prefix(chain).blocks == 1u);
  BOOST_TEST(index.size() == 2u);
}

BOOST_AUTO_TEST_CASE(check_sees_blocks_written_by_another_process) {
  auto store = block_store::open(cfg());
  check_index index{store->probe()};
  std::vector<block_key> chain{key_of(1), key_of(2), key_of(3), key_of(4)};
  BOOST_TEST(index.longest_prefix(chain).blocks == 0u);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    // The other process: its own store object on the same root.
    auto other = block_store::open(cfg(io_backend::thread_pool));
    for (int i = 0; i < 3; ++i)
      other->write(chain[i], payload_for(chain[i], 3000), traffic_class::chatbot);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  BOOST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto hit = index.longest_prefix(chain);
  BOOST_TEST(hit.blocks == 3u);
  BOOST_TEST(hit.revalidated == 3u);
  // A read adopts the foreign block into this process's catalog (so GC and LRU see it).
  std::vector<std::byte> out(3000);
  BOOST_TEST((store->read(chain[0], out).status == read_status::ok));
  BOOST_TEST((out == payload_for(chain[0], 3000)));
  BOOST_TEST(store->catalog().find(chain[0]).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
