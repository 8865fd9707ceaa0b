#include "balancers/sim/prefix_cache.hpp"
#include "balancers/sim/swa_store.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace deepinfer::balancers::sim;
using chain = std::vector<uint64_t>;

BOOST_AUTO_TEST_SUITE(prefix_cache_suite)

BOOST_AUTO_TEST_CASE(match_counts_leading_stored_blocks_and_stops_at_the_first_miss) {
  prefix_cache c({.capacity_blocks = 100, .ttl_s = 10.0});
  c.insert(chain{1, 2, 3, 4}, 0.0);
  BOOST_TEST(c.size() == 4);
  BOOST_TEST(c.match(chain{1, 2, 3, 4, 5}, 1.0) == 4);
  BOOST_TEST(c.match(chain{1, 2, 9}, 1.0) == 2);
  BOOST_TEST(c.match(chain{7, 2, 3}, 1.0) == 0);
  c.insert(chain{1, 2, 9, 10}, 1.0); // shares the first two blocks
  BOOST_TEST(c.size() == 6);
  BOOST_TEST(c.match(chain{1, 2, 9, 10}, 2.0) == 4);
  BOOST_TEST(c.match(chain{1, 2, 3, 4}, 2.0) == 4);
}

BOOST_AUTO_TEST_CASE(extending_a_leaf_keeps_the_prefix_and_adds_the_tail) {
  prefix_cache c({.capacity_blocks = 100, .ttl_s = 10.0});
  c.insert(chain{1, 2, 3}, 0.0);
  c.insert(chain{1, 2, 3, 4, 5}, 1.0);
  BOOST_TEST(c.size() == 5);
  BOOST_TEST(c.match(chain{1, 2, 3, 4, 5, 6}, 2.0) == 5);
}

BOOST_AUTO_TEST_CASE(blocks_expire_after_the_ttl_unless_refreshed) {
  prefix_cache c({.capacity_blocks = 100, .ttl_s = 10.0});
  c.insert(chain{1, 2, 3}, 0.0);
  BOOST_TEST(c.match(chain{1, 2, 3}, 9.0) == 3); // refreshed at 9
  BOOST_TEST(c.match(chain{1, 2, 3}, 18.0) == 3);
  BOOST_TEST(c.match(chain{1, 2, 3}, 28.5) == 0);
  BOOST_TEST(c.size() == 0);
}

BOOST_AUTO_TEST_CASE(capacity_evicts_least_recently_used_leaf_tails_to_ninety_percent) {
  prefix_cache c({.capacity_blocks = 10, .ttl_s = 1e9});
  c.insert(chain{1, 2, 3, 4, 5, 6}, 0.0);
  c.insert(chain{7, 8, 9, 10, 11, 12}, 1.0);
  // 12 > 10: free down to 9 from the oldest leaf, which loses its last 3 blocks.
  BOOST_TEST(c.size() == 9);
  BOOST_TEST(c.match(chain{1, 2, 3, 4, 5, 6}, 2.0) == 3);
  BOOST_TEST(c.match(chain{7, 8, 9, 10, 11, 12}, 2.0) == 6);
}


BOOST_AUTO_TEST_CASE(swa_snapshots_live_for_their_ttl) {
  swa_store s({.ttl_s = 180.0});
  s.put(42, 10.0);
  BOOST_TEST(s.has(42, 190.0));
  BOOST_TEST(!s.has(42, 190.5));
  BOOST_TEST(!s.has(43, 11.0));
  s.collect(200.0);
  BOOST_TEST(s.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
