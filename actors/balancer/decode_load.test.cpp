#include "actors/balancer/decode_load.hpp"
#include "actors/balancer/prefill_load.hpp"

#include <set>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

namespace {

std::vector<live_instance> instances(std::initializer_list<std::pair<const char*, uint32_t>> xs) {
  std::vector<live_instance> out;
  for (auto [name, ranks] : xs)
    out.push_back({name, "node", nullptr, ranks, {}});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(decode_load_tests)

BOOST_AUTO_TEST_CASE(leases_spread_requests_and_release_on_destruction) {
  auto table = std::make_shared<decode_load>(deepinfer::balancers::decode_balancer::config{});
  auto live = instances({{"d0/decode", 2}});
  auto a = decode_load::assign(table, live, 1000);
  BOOST_REQUIRE(a);
  BOOST_TEST(a->rank() == 0u);  // ties go to the lowest index
  auto b = decode_load::assign(table, live, 1000);
  BOOST_REQUIRE(b);
  BOOST_TEST(b->rank() == 1u);  // the idle rank wins over the loaded one
  auto load = table->snapshot();
  BOOST_REQUIRE(load.size() == 2u);
  BOOST_TEST(load[0].load.requests == 1);
  BOOST_TEST(load[1].load.kv_tokens == 1000);
  a.reset();
  b.reset();
  load = table->snapshot();
  BOOST_TEST(load[0].load.requests == 0);
  BOOST_TEST(load[0].load.kv_tokens == 0);
  BOOST_TEST(load[1].load.requests == 0);
  BOOST_TEST(load[1].load.kv_tokens == 0);
}

BOOST_AUTO_TEST_CASE(one_router_spans_every_rank_of_every_instance) {
  auto table = std::make_shared<decode_load>(deepinfer::balancers::decode_balancer::config{});
  auto live = instances({{"d0/decode", 1}, {"d1/decode", 2}});
  std::vector<std::unique_ptr<decode_load::lease>> held;
  for (int i = 0; i < 3; ++i)
    held.push_back(decode_load::assign(table, live, 100));
  std::set<std::pair<std::string, uint32_t>> used;
  for (auto& l : held)
    used.insert({l->instance(), l->rank()});
  BOOST_TEST(used.size() == 3u);  // one request per rank before any rank gets a second
  // An instance that is gone (not live) gets nothing; its old slot keeps its count until released.
  auto only_d1 = instances({{"d1/decode", 2}});
  auto next = decode_load::assign(table, only_d1, 100);
  BOOST_REQUIRE(next);
  BOOST_TEST(next->instance() == "d1/decode");
}

BOOST_AUTO_TEST_CASE(full_ranks_get_no_lease) {
  deepinfer::balancers::decode_balancer::config cfg;
  cfg.max_batch = 1;
  auto table = std::make_shared<decode_load>(cfg);
  auto live = instances({{"d0/decode", 1}});
  auto a = decode_load::assign(table, live, 10);
  BOOST_REQUIRE(a);
  BOOST_TEST(!decode_load::assign(table, live, 10));
  a.reset();
  BOOST_TEST(static_cast<bool>(decode_load::assign(table, live, 10)));
  BOOST_TEST(!decode_load::assign(table, {}, 10));  // nothing live, nothing placed
}

BOOST_AUTO_TEST_CASE(prefill_router_picks_the_least_outstanding_quota) {
  auto table = std::make_shared<prefill_load>();
  auto live = instances({{"p0/prefill", 2}});
  auto big = prefill_load::assign(table, live, 2.0);
  BOOST_REQUIRE(big);
  BOOST_TEST(big->rank() == 0u);
  auto small1 = prefill_load::assign(table, live, 0.1);
  auto small2 = prefill_load::assign(table, live, 0.1);
  BOOST_REQUIRE(small1);
  BOOST_REQUIRE(small2);
  // Both small ones queue behind each other on rank 1 rather than behind the big one.
  BOOST_TEST(small1->rank() == 1u);
  BOOST_TEST(small2->rank() == 1u);
  big.reset();
  auto after = prefill_load::assign(table, live, 0.1);
  BOOST_TEST(after->rank() == 0u);
  small1.reset();
  small2.reset();
  after.reset();
  for (auto& s : table->snapshot()) {
    BOOST_TEST(s.requests == 0);
    BOOST_TEST(s.quota_s == 0.0);
  }
  BOOST_TEST(!prefill_load::assign(table, {}, 1.0));
}

BOOST_AUTO_TEST_SUITE_END()
