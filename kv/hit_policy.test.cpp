#include "kv/hit_policy.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace deepinfer::kv;

BOOST_AUTO_TEST_SUITE(hit_policy_suite)

// One row of DESIGN §4.3's table: prompt length, stored leading blocks, SWA snapshot at L1,
// expected hit length, SWA mode and blocks to fetch.
struct row {
  const char* what;
  std::size_t prompt;
  std::size_t stored;
  bool swa;
  std::size_t hit;
  swa_mode mode;
  std::size_t blocks;
};

BOOST_AUTO_TEST_CASE(decisions_follow_the_design_table) {
  const std::vector<row> table = {
    {"L < 134 hits nothing", 133, 1, true, 0, swa_mode::none, 0},
    {"L = 134: cap 0", 134, 1, true, 0, swa_mode::none, 0},
    {"no stored blocks", 10'000, 0, true, 0, swa_mode::none, 0},
    {"SWA window at L1: exact", 1000, 7, true, 768, swa_mode::exact, 6},
    {"SWA miss: L1 - 128, replay", 1000, 7, false, 640, swa_mode::replay, 6},
    {"stored run shorter than cap", 1000, 2, true, 256, swa_mode::exact, 2},
    {"L - 134 cap on a fully stored prompt", 640, 5, true, 384, swa_mode::exact, 3},
    {"partial last block, cap exactly on a boundary", 646, 5, true, 512, swa_mode::exact, 4},
    {"partial last block, one short of the boundary", 645, 5, true, 384, swa_mode::exact, 3},
    {"partial last block, SWA miss", 650, 5, false, 384, swa_mode::replay, 4},
    {"L1 = 128 and SWA miss replays from 0", 300, 2, false, 0, swa_mode::replay, 1},
  };
  const hit_policy policy;
  for (const auto& r : table) {
    BOOST_TEST_CONTEXT(r.what) {
      const auto d = policy(r.prompt, r.stored, r.swa);
      BOOST_TEST(d.hit_length == r.hit);
      BOOST_TEST((d.swa == r.mode));
      BOOST_TEST(d.blocks == r.blocks);
      if (d.swa == swa_mode::replay)
        BOOST_TEST(d.replay_begin == d.blocks * 128 - 128);
    }
  }
}

BOOST_AUTO_TEST_CASE(decide_asks_the_swa_directory_about_l1_only) {
  const hit_policy policy;
  std::vector<std::size_t> asked;
  const auto d = policy.decide(1000, 7, [&](std::size_t l1) {
    asked.push_back(l1);
    return true;
  });
  BOOST_TEST(asked == std::vector<std::size_t>{768});
  BOOST_TEST(d.hit_length == 768u);
  asked.clear();
  policy.decide(100, 7, [&](std::size_t l1) {
    asked.push_back(l1);
    return true;
  });
  BOOST_TEST(asked.empty());
}

BOOST_AUTO_TEST_CASE(blocks_of_returns_the_leading_keys_to_fetch) {
  std::vector<block_key> chain(5);
  for (uint64_t i = 0; i < 5; ++i)
    chain[i] = block_key{i, 0};
  const auto d = hit_policy{}(1000, 5, false);
  const auto fetch = d.blocks_of(chain);
  BOOST_REQUIRE_EQUAL(fetch.size(), 5u);
  BOOST_TEST(fetch.back().lo == 4u);
}

BOOST_AUTO_TEST_CASE(custom_sizes_scale_the_rule) {
  const hit_policy policy{hit_policy::config{16, 20}};
  // cap = 100 - 20 = 80 -> 5 blocks of 16
  BOOST_TEST(policy.reusable_length(100, 9) == 80u);
  BOOST_TEST(policy(100, 9, false).hit_length == 64u);
}

BOOST_AUTO_TEST_SUITE_END()
