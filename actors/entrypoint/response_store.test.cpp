#include "actors/entrypoint/response_store.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::actors::response_store;
using namespace std::chrono_literals;

namespace {

response_store::entry turn(std::string body, std::string text) {
  response_store::entry e;
  e.body = std::move(body);
  deepinfer::recipe::message m;
  m.content.push_back(deepinfer::recipe::content_part::text(std::move(text)));
  e.history.push_back(std::move(m));
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(response_store_suite)

BOOST_AUTO_TEST_CASE(a_stored_turn_is_its_tenants_only_and_can_be_deleted) {
  response_store s({3600s, 1 << 20});
  s.put("key-a", "resp_1", turn("{\"id\":\"resp_1\"}", "hello"));
  auto got = s.get("key-a", "resp_1");
  BOOST_REQUIRE(got);
  BOOST_TEST(got->body == "{\"id\":\"resp_1\"}");
  BOOST_TEST(got->history.at(0).content.at(0).value == "hello");
  BOOST_TEST(!s.get("key-b", "resp_1"));
  BOOST_TEST(!s.get("", "resp_1"));
  BOOST_TEST(!s.get("key-", "aresp_1")); // (tenant, id) pairs never spell each other
  BOOST_TEST(!s.erase("key-b", "resp_1"));
  BOOST_TEST(s.erase("key-a", "resp_1"));
  BOOST_TEST(!s.get("key-a", "resp_1"));
  BOOST_TEST(s.size() == 0u);
  BOOST_TEST(s.bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(a_background_turns_end_replaces_its_entry_but_never_brings_back_a_deleted_one) {
  response_store s({3600s, 1 << 20});
  auto queued = turn("{\"status\":\"queued\"}", "");
  queued.background = true;
  queued.cancel = [] {};
  s.put("k", "resp_1", queued);
  s.put("k", "resp_2", queued);
  BOOST_TEST(s.get("k", "resp_1")->running());
  BOOST_TEST(s.replace("k", "resp_1", turn("{\"status\":\"completed\"}", "done")));
  BOOST_TEST(!s.get("k", "resp_1")->running());
  BOOST_TEST(s.get("k", "resp_1")->body == "{\"status\":\"completed\"}");
  BOOST_TEST(s.erase("k", "resp_2"));
  BOOST_TEST(!s.replace("k", "resp_2", turn("{\"status\":\"completed\"}", "done")));
  BOOST_TEST(!s.get("k", "resp_2"));
  BOOST_TEST(!s.replace("other", "resp_1", turn("{}", ""))); // another tenant's id is not there
  BOOST_TEST(s.size() == 1u);
}

BOOST_AUTO_TEST_CASE(turns_expire_after_the_ttl_and_the_oldest_go_when_full) {
  const auto t0 = response_store::clock::now();
  response_store s({60s, 64 * 1024});
  s.put("", "old", turn("x", std::string(20000, 'a')), t0);
  s.put("", "mid", turn("x", std::string(20000, 'b')), t0 + 10s);
  BOOST_TEST(s.get("", "old", t0 + 59s));
  BOOST_TEST(!s.get("", "old", t0 + 61s)); // expired
  BOOST_TEST(s.get("", "mid", t0 + 61s));
  s.put("", "a", turn("x", std::string(20000, 'c')), t0 + 62s);
  s.put("", "b", turn("x", std::string(20000, 'd')), t0 + 63s);
  s.put("", "c", turn("x", std::string(20000, 'e')), t0 + 64s); // over 64 KiB: the oldest goes
  BOOST_TEST(!s.get("", "mid", t0 + 64s));
  BOOST_TEST(s.get("", "c", t0 + 64s));
  BOOST_TEST(s.bytes() <= 64u * 1024);
  s.put("", "huge", turn("x", std::string(100000, 'f')), t0 + 65s); // larger than the store: not kept
  BOOST_TEST(!s.get("", "huge", t0 + 65s));
  BOOST_TEST(s.get("", "c", t0 + 65s)); // and it evicted nothing
}

BOOST_AUTO_TEST_SUITE_END()
