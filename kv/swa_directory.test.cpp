#include "kv/swa_directory.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace deepinfer::kv;

namespace {

block_key key_of(uint64_t i) {
  // Spread like XXH3 output so that the ring sees uniform points.
  uint64_t x = i * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return block_key{i, x};
}

} // namespace

BOOST_AUTO_TEST_SUITE(swa_directory_suite)

BOOST_AUTO_TEST_CASE(lookup_says_local_remote_or_absent) {
  auto time = std::make_shared<manual_clock>(0);
  swa_directory dir{swa_directory::config{4, {}, 180'000, time}};
  dir.record(key_of(1), node_id{7});
  BOOST_TEST((dir.lookup(key_of(1), node_id{7}) == swa_location{swa_where::local, node_id{7}}));
  BOOST_TEST((dir.lookup(key_of(1), node_id{3}) == swa_location{swa_where::remote, node_id{7}}));
  BOOST_TEST((dir.lookup(key_of(2), node_id{7}).where == swa_where::absent));
  time->advance(180'000);
  BOOST_TEST((dir.lookup(key_of(1), node_id{7}).where == swa_where::absent));
}

BOOST_AUTO_TEST_CASE(a_dead_node_is_forgotten) {
  swa_directory dir{swa_directory::config{}};
  for (uint64_t i = 0; i < 10; ++i)
    dir.record(key_of(i), node_id{static_cast<uint32_t>(i % 2)});
  BOOST_TEST(dir.forget_node(node_id{1}) == 5u);
  BOOST_TEST((dir.lookup(key_of(1), node_id{0}).where == swa_where::absent));
  BOOST_TEST((dir.lookup(key_of(2), node_id{0}).where == swa_where::local));
}

BOOST_AUTO_TEST_CASE(consistent_hashing_spreads_keys_and_moves_only_a_lost_shards_keys) {
  swa_directory dir{swa_directory::config{8, {}, 180'000, std::make_shared<manual_clock>(0)}};
  constexpr uint64_t n = 8000;
  std::vector<shard_id> before(n);
  std::vector<std::size_t> per_shard(8);
  for (uint64_t i = 0; i < n; ++i) {
    before[i] = *dir.shard_for(key_of(i));
    ++per_shard[before[i].value];
    dir.record(key_of(i), node_id{1});
  }
  for (auto count : per_shard) {
    BOOST_TEST(count > n / 8 / 2); // within 2x of fair with 64 virtual nodes
    BOOST_TEST(count < n / 8 * 2);
  }
  const auto lost = dir.shard_size(shard_id{3});
  BOOST_TEST(lost == per_shard[3]);
  BOOST_TEST(dir.remove_shard(shard_id{3}));
  std::size_t moved = 0, absent = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const auto now = *dir.shard_for(key_of(i));
    if (now != before[i]) {
      ++moved;
      BOOST_TEST(before[i].value == 3u); // only the lost shard's keys move
    }
    if (dir.lookup(key_of(i), node_id{1}).where == swa_where::absent)
      ++absent;
  }
  BOOST_TEST(moved == per_shard[3]);
  BOOST_TEST(absent == per_shard[3]);
  BOOST_TEST(dir.size() == n - lost);
}

BOOST_AUTO_TEST_SUITE_END()
