#include "kv/flat_key_set.hpp"

#include <boost/test/unit_test.hpp>

#include <random>
#include <set>

using namespace deepinfer::kv;

BOOST_AUTO_TEST_SUITE(flat_key_set_suite)

BOOST_AUTO_TEST_CASE(matches_std_set_under_random_inserts_and_erases) {
  flat_key_set flat;
  std::set<block_key> ref;
  std::mt19937_64 rng(42);
  // Few distinct low words force long probe runs and wrap-around through backward shifts.
  for (int step = 0; step < 200'000; ++step) {
    const block_key key{rng() % 4096, rng() % 3};
    switch (rng() % 3) {
      case 0:
        BOOST_REQUIRE_EQUAL(flat.insert(key), ref.insert(key).second);
        break;
      case 1:
        BOOST_REQUIRE_EQUAL(flat.erase(key), ref.erase(key) > 0);
        break;
      default:
        BOOST_REQUIRE_EQUAL(flat.contains(key), ref.count(key) > 0);
    }
    BOOST_REQUIRE_EQUAL(flat.size(), ref.size());
  }
  for (const auto& key : ref)
    BOOST_REQUIRE(flat.contains(key));
}

BOOST_AUTO_TEST_CASE(the_zero_key_is_an_ordinary_member) {
  flat_key_set flat;
  BOOST_TEST(!flat.contains(block_key{}));
  BOOST_TEST(flat.insert(block_key{}));
  BOOST_TEST(!flat.insert(block_key{}));
  BOOST_TEST(flat.contains(block_key{}));
  BOOST_TEST(flat.size() == 1u);
  BOOST_TEST(flat.erase(block_key{}));
  BOOST_TEST(flat.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
