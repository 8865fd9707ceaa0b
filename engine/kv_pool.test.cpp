#include "engine/kv_pool.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::engine;

BOOST_AUTO_TEST_SUITE(kv_pool_suite)

BOOST_AUTO_TEST_CASE(allocate_grows_tables_and_answers_does_not_fit_as_a_value) {
  kv_pool pool(kv_pool::config{4, 3, 128});
  sequence_id a{1}, b{2};
  auto x = pool.allocate(a, 129);
  BOOST_REQUIRE(x);
  BOOST_TEST(x->blocks.size() == 2u);
  BOOST_TEST(x->tokens == 256);
  BOOST_TEST(pool.allocate(a, 256)->blocks.size() == 2u); // already covered
  BOOST_TEST(!pool.allocate(b, 3 * 128)); // 3 > 2 free
  BOOST_TEST(pool.table(b).empty());      // and nothing changed
  BOOST_TEST(pool.free_blocks() == 2);
  BOOST_TEST(pool.allocate(b, 2 * 128).has_value());
  BOOST_TEST(pool.free_blocks() == 0);
  pool.free(a);
  BOOST_TEST(pool.free_blocks() == 2);
}

BOOST_AUTO_TEST_CASE(shared_blocks_are_freed_with_their_last_reference) {
  kv_pool pool(kv_pool::config{4, 3, 128});
  sequence_id a{1}, b{2};
  auto x = pool.allocate(a, 256);
  pool.row(a, 200)[2] = 42.0f;
  pool.append_shared(b, x->blocks[0]);
  pool.append_shared(b, x->blocks[1]);
  BOOST_TEST(pool.ref_count(x->blocks[0]) == 2);
  BOOST_TEST(pool.row(b, 200)[2] == 42.0f);
  pool.free(a);
  BOOST_TEST(pool.free_blocks() == 2);
  pool.pin(x->blocks[0]);
  pool.free(b);
  BOOST_TEST(pool.free_blocks() == 3);
  pool.unpin(x->blocks[0]);
  BOOST_TEST(pool.free_blocks() == 4);
}

BOOST_AUTO_TEST_SUITE_END()
