#include "kv/block_store.hpp"

#include "kv/temp_dir.test.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>

#include <sys/wait.h>
#include <unistd.h>

using namespace deepinfer::kv;

namespace {

std::vector<std::byte> content(uint64_t i) {
  // 256 KiB .. 1 MiB, so that a kill is likely to land inside a write.
  std::vector<std::byte> out(256 * 1024 + (i * 77'777) % (768 * 1024));
  uint64_t x = i + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return out;
}

block_key key_of(uint64_t i) {
  return block_key{i + 1, 0xC0FFEE};
}

block_store::config config_for(const std::filesystem::path& root) {
  block_store::config c;
  c.root = root;
  c.fingerprint = model_fingerprint::of("crash-test");
  c.fsync = fsync_policy::none; // a SIGKILL (not a power cut) must be survivable without fsync
  c.backend = io_backend::thread_pool;
  c.io_threads = 1;
  return c;
}

/// Forks a writer of blocks first, first+1, ...; returns after `acks` completed writes, with the
/// writer SIGKILLed in whatever it was doing next.
uint64_t write_and_kill(const std::filesystem::path& root, uint64_t first, int acks) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    auto store = block_store::open(config_for(root));
    for (uint64_t i = first;; ++i) {
      const auto data = content(i);
      if (store->write(key_of(i), data, traffic_class::chatbot) == write_status::io_error)
        ::_exit(2);
      const char ack = 1;
      if (::write(fds[1], &ack, 1) != 1)
        ::_exit(3);
    }
  }
  ::close(fds[1]);
  int got = 0;
  char ack;
  while (got < acks && ::read(fds[0], &ack, 1) == 1)
    ++got;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(fds[0]);
  BOOST_REQUIRE(WIFSIGNALED(status));
  BOOST_REQUIRE_EQUAL(got, acks);
  return first + static_cast<uint64_t>(got);
}

} // namespace

BOOST_AUTO_TEST_SUITE(block_store_crash)

BOOST_AUTO_TEST_CASE(sigkill_during_writes_leaves_no_block_that_reads_back_wrong) {
  testing::temp_dir dir;
  uint64_t next = 0;
  std::vector<uint64_t> acked;
  for (int round = 0; round < 4; ++round) {
    const auto first = next + 5; // skip the blocks a killed writer may or may not have finished
    next = write_and_kill(dir.path, first, 12 + 5 * round);
    for (uint64_t i = first; i < next; ++i)
      acked.push_back(i);
  }
  // Reopen: debris is cleaned, every block present reads back exactly, every acked one is there.
  auto store = block_store::open(config_for(dir.path));
  BOOST_REQUIRE(store);
  BOOST_TEST(std::filesystem::is_empty(store->path_of(key_of(0)).parent_path().parent_path() / "tmp"));
  std::size_t present = 0;
  std::vector<std::byte> out(1024 * 1024 + 1);
  for (uint64_t i = 0; i < next + 2; ++i) {
    const auto r = store->read(key_of(i), out);
    if (r.status == read_status::not_found)
      continue;
    BOOST_TEST_REQUIRE((r.status == read_status::ok));
    const auto expect = content(i);
    BOOST_TEST_REQUIRE(r.bytes == expect.size());
    BOOST_TEST_REQUIRE(std::equal(expect.begin(), expect.end(), out.begin()));
    ++present;
  }
  for (auto i : acked)
    BOOST_TEST(store->exists(key_of(i)));
  BOOST_TEST(present >= acked.size());
  BOOST_TEST(store->verify(false).corrupt == 0u);
  // The store accepts writes again.
  BOOST_TEST((store->write(key_of(next), content(next), traffic_class::chatbot) != write_status::io_error));
}

BOOST_AUTO_TEST_SUITE_END()
