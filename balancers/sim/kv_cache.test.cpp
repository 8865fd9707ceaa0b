#include "balancers/sim/kv_cache.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace deepinfer::balancers::sim;
using chain = std::vector<uint64_t>;

BOOST_AUTO_TEST_SUITE(kv_cache_suite)

BOOST_AUTO_TEST_CASE(match_counts_leading_stored_blocks_and_stops_at_the_first_miss) {
  kv_cache c({.capacity_blocks = 100, .ttl_s = 10.0});
  c.insert(chain{1, 2, 3, 4}, 0.0);
  BOOST_TEST(c.size() == 4);
  BOOST_TEST(c.match(chain{1, 2, 3, 4, 5}, 1.0) == 4);
  BOOST_TEST(c.match(chain{1, 2, 9}, 1.0) == 2);
  BOOST_TEST(c.match(chain{7, 2, 3}, 1.0) == 0);
  c.insert(chain{1, 2, 9, 10}, 1.0); // shares the first two blocks: only two are new
  BOOST_TEST(c.size() == 6);
  BOOST_TEST(c.match(chain{1, 2, 9, 10}, 2.0) == 4);
  BOOST_TEST(c.match(chain{1, 2, 3, 4}, 2.0) == 4);
}

BOOST_AUTO_TEST_CASE(blocks_expire_after_the_ttl_unless_touched) {
  kv_cache c({.capacity_blocks = 100, .ttl_s = 10.0});
  c.insert(chain{1, 2, 3}, 0.0);
  BOOST_TEST(c.match(chain{1, 2, 3}, 9.0) == 3); // touched at 9
  c.collect(18.0);
  BOOST_TEST(c.match(chain{1, 2, 3}, 18.0) == 3);
  c.collect(28.5); // GC expires them (CHECK answers from metadata until it does)
  BOOST_TEST(c.match(chain{1, 2, 3}, 28.5) == 0);
  BOOST_TEST(c.size() == 0);
}

BOOST_AUTO_TEST_CASE(over_capacity_gc_evicts_least_recently_used_blocks_to_ninety_percent) {
  kv_cache c({.capacity_blocks = 10, .ttl_s = 1e9});
  c.insert(chain{1, 2, 3, 4, 5, 6}, 0.0);
  c.insert(chain{7, 8, 9, 10, 11, 12}, 1.0);
  // 12 > 10: kv's GC frees down to 9, least recently used first: the first chain's first three
  // blocks (written in chain order, as the live prefix cache writes them), so it no longer hits.
  BOOST_TEST(c.size() == 9);
  BOOST_TEST(c.match(chain{1, 2, 3, 4, 5, 6}, 2.0) == 0);
  BOOST_TEST(c.match(chain{7, 8, 9, 10, 11, 12}, 2.0) == 6);
}

BOOST_AUTO_TEST_CASE(swa_snapshots_live_for_their_ttl) {
  kv_cache c({.swa_ttl_s = 180.0});
  c.put_snapshot(42, 10.0);
  BOOST_TEST(c.has_snapshot(42, 189.9));
  BOOST_TEST(!c.has_snapshot(42, 190.5));
  BOOST_TEST(!c.has_snapshot(43, 11.0));
  c.collect(200.0);
  BOOST_TEST(c.snapshots() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
