#include "kv/swa_store.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::kv;

namespace {

std::vector<std::byte> bytes(std::size_t n, int fill) {
  return std::vector<std::byte>(n, static_cast<std::byte>(fill));
}

} // namespace

BOOST_AUTO_TEST_SUITE(swa_store_suite)

BOOST_AUTO_TEST_CASE(snapshots_expire_after_the_ttl) {
  auto time = std::make_shared<manual_clock>(0);
  swa_store store{swa_store::config{180'000, 1 << 20, time}};
  const block_key key{1, 2};
  BOOST_TEST(store.put(key, bytes(100, 7)));
  time->advance(179'999);
  auto got = store.get(key);
  BOOST_REQUIRE(got);
  BOOST_TEST((*got == bytes(100, 7)));
  time->advance(1);
  BOOST_TEST(!store.contains(key));
  BOOST_TEST(!store.get(key));
  BOOST_TEST(store.size() == 0u);
}

BOOST_AUTO_TEST_CASE(the_memory_cap_evicts_least_recently_used) {
  auto time = std::make_shared<manual_clock>(0);
  swa_store store{swa_store::config{180'000, 300, time}};
  store.put({1, 0}, bytes(100, 1));
  store.put({2, 0}, bytes(100, 2));
  store.put({3, 0}, bytes(100, 3));
  auto held = store.get({1, 0}); // 1 is now the most recent, and a reader holds it
  store.put({4, 0}, bytes(100, 4));
  BOOST_TEST(!store.contains({2, 0}));
  BOOST_TEST(store.contains({1, 0}));
  BOOST_TEST(store.bytes() == 300u);
  BOOST_TEST(!store.put({5, 0}, bytes(301, 5)));
  store.put({6, 0}, bytes(300, 6)); // evicts everything else, held bytes stay readable
  BOOST_TEST(store.size() == 1u);
  BOOST_TEST((*held == bytes(100, 1)));
}

BOOST_AUTO_TEST_CASE(expire_drops_only_old_snapshots) {
  auto time = std::make_shared<manual_clock>(0);
  swa_store store{swa_store::config{1000, 1 << 20, time}};
  store.put({1, 0}, bytes(10, 1));
  time->advance(600);
  store.put({2, 0}, bytes(10, 2));
  time->advance(400);
  BOOST_TEST(store.expire() == 1u);
  BOOST_TEST(store.contains({2, 0}));
}

BOOST_AUTO_TEST_SUITE_END()
