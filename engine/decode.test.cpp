// Decode ends a request on a stop id or at max tokens, and a finished sequence stops advancing.
#include <algorithm>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

BOOST_AUTO_TEST_SUITE(decode_stopping)

BOOST_AUTO_TEST_CASE(stop_ids_and_max_tokens_finish_a_sequence_and_it_stops_advancing) {
  auto& e = tiny_engine();
  auto prompt = random_tokens(50, 61);
  // Learn the greedy continuation, then stop on its first token not seen before in it.
  prefill_request probe;
  probe.seq = next_seq();
  probe.tokens = prompt;
  probe.sampling.max_tokens = 100;
  std::vector<int32_t> cont{e.prefill(probe).first.id};
  std::vector<sequence_id> one{probe.seq};
  for (int i = 0; i < 8; ++i)
    cont.push_back(e.decode_step(one)[0].token.id);
  e.free(probe.seq);
  std::size_t at = 1;
  while (at < cont.size() && std::find(cont.begin(), cont.begin() + static_cast<long>(at),
                                       cont[at]) != cont.begin() + static_cast<long>(at))
    ++at;
  BOOST_REQUIRE(at < cont.size());
  prefill_request req = probe;
  req.seq = next_seq();
  req.sampling.stop_ids = {cont[at]};
  req.sampling.logprobs = true;
  auto p = e.prefill(req);
  BOOST_TEST(p.first.logprob < 0.0f);
  one = {req.seq};
  for (std::size_t i = 1; i < at; ++i)
    BOOST_TEST(!e.decode_step(one)[0].finished);
  auto last = e.decode_step(one)[0];
  BOOST_TEST(last.token.id == cont[at]);
  BOOST_TEST(last.finished);
  BOOST_TEST((e.decode_step(one)[0].status == engine_status::invalid_request));
  BOOST_TEST(e.tokens(req.seq).size() == prompt.size() + at + 1);
  e.free(req.seq);
  // max_tokens counts the prefill's token.
  req.seq = next_seq();
  req.sampling.stop_ids.clear();
  req.sampling.max_tokens = 2;
  e.prefill(req);
  one = {req.seq};
  BOOST_TEST(e.decode_step(one)[0].finished);
  e.free(req.seq);
}

BOOST_AUTO_TEST_SUITE_END()
