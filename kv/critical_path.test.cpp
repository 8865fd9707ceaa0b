// The entrypoint's critical path end to end, as the actor shells will run it: hash the prompt,
// CHECK, ask the SWA directory about L1, apply the hit policy, fetch the blocks asynchronously.
#include "kv/block_store.hpp"
#include "kv/check_index.hpp"
#include "kv/hash_chain.hpp"
#include "kv/hit_policy.hpp"
#include "kv/swa_directory.hpp"
#include "kv/swa_store.hpp"
#include "kv/temp_dir.test.hpp"

#include <boost/test/unit_test.hpp>

#include <future>
#include <numeric>

using namespace deepinfer::kv;

BOOST_AUTO_TEST_SUITE(critical_path)

BOOST_AUTO_TEST_CASE(a_second_request_hits_the_blocks_and_the_window_of_the_first) {
  testing::temp_dir dir;
  auto time = std::make_shared<manual_clock>(1'000'000);
  const auto scfg = testing::store_config(dir, "ced_moe/tiny;kv=f32", time);
  check_index index;
  auto store = block_store::open(scfg, &index);
  swa_directory directory{swa_directory::config{4, {}, 180'000, time}};
  swa_store windows{swa_store::config{180'000, 1 << 20, time}};
  const hash_chain hasher{scfg.fingerprint};
  const hit_policy policy;
  const node_id self{1};

  // 1. The first request (1000 tokens) is prefilled from scratch; its 7 full blocks are written
  // and its SWA window at align_down(L - 1, 128) = 896 is kept on this node.
  std::vector<token_id> prompt(1000);
  std::iota(prompt.begin(), prompt.end(), 100);
  const auto chain = hasher.keys(prompt);
  BOOST_REQUIRE_EQUAL(chain.size(), 7u);
  BOOST_TEST(index.longest_prefix(chain).blocks == 0u);
  for (const auto& key : chain)
    store->write(key, std::vector<std::byte>(4096, std::byte{7}), traffic_class::chatbot);
  windows.put(chain[896 / 128 - 1], std::vector<std::byte>(512, std::byte{9}));
  directory.record(chain[896 / 128 - 1], self);

  // 2. A follow-up turn extends the conversation to 1100 tokens.
  prompt.resize(1100);
  std::iota(prompt.begin() + 1000, prompt.end(), 5000);
  const auto next_chain = hasher.keys(prompt);
  const auto hit = index.longest_prefix(next_chain);
  BOOST_TEST(hit.blocks == 7u);
  const auto decision = policy.decide(prompt.size(), hit.blocks, [&](std::size_t l1) {
    return directory.lookup(next_chain[l1 / 128 - 1], self).where != swa_where::absent;
  });
  // cap = 1100 - 134 = 966 -> L1 = 896, and the window ending at 896 is local: exact hit.
  BOOST_TEST(decision.hit_length == 896u);
  BOOST_TEST((decision.swa == swa_mode::exact));
  BOOST_TEST(windows.get(next_chain[decision.blocks - 1]) != nullptr);

  // 3. The prefill rank fetches the hit blocks into host buffers asynchronously.
  const auto fetch = decision.blocks_of(next_chain);
  std::vector<std::vector<std::byte>> host(fetch.size(), std::vector<std::byte>(4096));
  std::vector<std::promise<read_result>> done(fetch.size());
  for (std::size_t i = 0; i < fetch.size(); ++i)
    store->read_async(fetch[i], host[i], [&, i](read_result r) { done[i].set_value(r); });
  for (auto& d : done)
    BOOST_TEST((d.get_future().get().status == read_status::ok));

  // 4. Three minutes later the window is gone: the same request replays the last block.
  time->advance(180'000);
  const auto later = policy.decide(prompt.size(), hit.blocks, [&](std::size_t l1) {
    return directory.lookup(next_chain[l1 / 128 - 1], self).where != swa_where::absent;
  });
  BOOST_TEST(later.hit_length == 768u);
  BOOST_TEST((later.swa == swa_mode::replay));
  BOOST_TEST(later.blocks == 7u);
}

BOOST_AUTO_TEST_SUITE_END()
