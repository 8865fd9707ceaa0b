#include "actors/entrypoint/admission_control.hpp"

#include <boost/test/unit_test.hpp>


using deepinfer::actors::admission_control;

namespace {

/// A clock the test moves by hand.
std::chrono::steady_clock::time_point fake_now{};

std::shared_ptr<admission_control> make(int64_t tokens, int64_t sequences, std::size_t waiting,
                                std::chrono::milliseconds timeout = std::chrono::milliseconds{30000}) {
  admission_control::config c;
  c.prefill_tokens_per_rank = tokens;
  c.decode_sequences_per_rank = sequences;
  c.max_waiting = waiting;
  c.queue_timeout = timeout;
  return std::make_shared<admission_control>(c, [] { return fake_now; });
}

} // namespace

BOOST_AUTO_TEST_SUITE(admission_control_suite)

BOOST_AUTO_TEST_CASE(admits_within_the_prefill_token_limit_then_queues_then_refuses) {
  auto a = make(1000, 100, 1);
  auto first = admission_control::request(a, 600, 1, 1, [] {});
  BOOST_REQUIRE((first.what == admission_control::outcome::admitted));
  int woken = 0;
  auto second = admission_control::request(a, 600, 1, 1, [&] { ++woken; });
  BOOST_REQUIRE((second.what == admission_control::outcome::queued));
  // The line holds one: a third is refused at once.
  BOOST_TEST((admission_control::request(a, 10, 1, 1, [] {}).what == admission_control::outcome::refused));
  BOOST_TEST(a->current().waiting == 1u);
  // The first one's prefill answers: its tokens leave and the second is admitted.
  first.ticket->prefilled();
  BOOST_TEST(woken == 1);
  BOOST_REQUIRE(second.place->ticket != nullptr);
  BOOST_TEST(a->current().prefill_tokens == 600);
  BOOST_TEST(a->current().sequences == 2);
  first.ticket.reset();
  second.place->ticket.reset();
  BOOST_TEST(a->current().prefill_tokens == 0);
  BOOST_TEST(a->current().sequences == 0);
}

BOOST_AUTO_TEST_CASE(a_prompt_longer_than_the_limit_runs_alone) {
  auto a = make(1000, 100, 8);
  auto big = admission_control::request(a, 50000, 1, 1, [] {});
  BOOST_TEST((big.what == admission_control::outcome::admitted));
  BOOST_TEST((admission_control::request(a, 1, 1, 1, [] {}).what == admission_control::outcome::queued));
}

BOOST_AUTO_TEST_CASE(limits_scale_with_live_ranks_and_count_sequences) {
  auto a = make(1000, 2, 8);
  auto x = admission_control::request(a, 900, 2, 1, [] {});
  auto y = admission_control::request(a, 900, 2, 1, [] {}); // two prefill ranks: 2000 tokens
  BOOST_TEST((x.what == admission_control::outcome::admitted));
  BOOST_TEST((y.what == admission_control::outcome::admitted));
  x.ticket->prefilled();
  y.ticket->prefilled();
  // Two sequences per decode rank, one decode rank: the third waits for a sequence to end.
  bool woke = false;
  auto z = admission_control::request(a, 1, 2, 1, [&] { woke = true; });
  BOOST_REQUIRE((z.what == admission_control::outcome::queued));
  x.ticket.reset();
  BOOST_TEST(woke);
}

BOOST_AUTO_TEST_CASE(a_short_prompt_passes_a_long_one_until_the_head_has_waited_half_the_timeout) {
  auto a = make(1000, 100, 8, std::chrono::milliseconds{200});
  auto running = admission_control::request(a, 800, 1, 1, [] {});
  auto longer = admission_control::request(a, 900, 1, 1, [] {});
  auto shorter = admission_control::request(a, 100, 1, 1, [] {});
  BOOST_REQUIRE((longer.what == admission_control::outcome::queued));
  BOOST_REQUIRE((shorter.what == admission_control::outcome::queued));
  // Capacity for 200 more appears (another waiter leaves): the short one fits and goes ahead.
  auto third = admission_control::request(a, 50, 1, 1, [] {});
  BOOST_TEST(a->withdraw(third.place));
  BOOST_TEST(shorter.place->ticket != nullptr);
  BOOST_TEST(longer.place->ticket == nullptr);
  // Past half the timeout the head holds the line: nothing passes it.
  shorter.place->ticket.reset();
  fake_now += std::chrono::milliseconds{120};
  auto later = admission_control::request(a, 10, 1, 1, [] {});
  BOOST_TEST((later.what == admission_control::outcome::queued));
  auto extra = admission_control::request(a, 10, 1, 1, [] {});
  BOOST_TEST(a->withdraw(extra.place)); // runs the line again
  BOOST_TEST(later.place->ticket == nullptr);
  // Once the long prompt's turn comes (the running one is prefilled) both go in order.
  running.ticket->prefilled();
  BOOST_TEST(longer.place->ticket != nullptr);
  BOOST_TEST(later.place->ticket != nullptr); // 900 + 10 fit, behind it
}

BOOST_AUTO_TEST_CASE(withdraw_is_false_once_admitted) {
  auto a = make(100, 100, 8);
  auto first = admission_control::request(a, 100, 1, 1, [] {});
  auto second = admission_control::request(a, 50, 1, 1, [] {});
  first.ticket->prefilled();
  BOOST_TEST(!a->withdraw(second.place));
  BOOST_TEST(second.place->ticket != nullptr);
}

BOOST_AUTO_TEST_SUITE_END()
