#include "kv/check_index.hpp"

#include "kv/hash_chain.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>
#include <set>

using namespace deepinfer::kv;

namespace {

std::vector<block_key> chain_of(std::size_t blocks) {
  std::vector<token_id> t(blocks * block_tokens);
  std::iota(t.begin(), t.end(), 7);
  return hash_chain{model_fingerprint::of("check")}.keys(t);
}

} // namespace

BOOST_AUTO_TEST_SUITE(check_index_suite)

BOOST_AUTO_TEST_CASE(longest_prefix_stops_at_first_missing_block) {
  const auto chain = chain_of(6);
  check_index index;
  for (int i : {0, 1, 2, 4, 5})
    index.insert(chain[i]);
  const auto hit = index.longest_prefix(chain);
  BOOST_TEST(hit.blocks == 3u);
  BOOST_TEST(hit.tokens() == 384u);
  BOOST_TEST(hit.revalidated == 0u);
  BOOST_TEST(index.longest_prefix(std::span{chain}.subspan(3)).blocks == 0u);
}

BOOST_AUTO_TEST_CASE(a_miss_is_revalidated_once_through_the_probe) {
  const auto chain = chain_of(5);
  std::set<block_key> elsewhere{chain[0], chain[1], chain[2], chain[3]};
  std::vector<block_key> asked;
  check_index index{[&](const block_key& key) {
    asked.push_back(key);
    return elsewhere.count(key) > 0;
  }};
  index.insert(chain[0]);
  index.insert(chain[2]);
  auto hit = index.longest_prefix(chain);
  BOOST_TEST(hit.blocks == 4u);
  BOOST_TEST(hit.revalidated == 2u); // blocks 1 and 3
  BOOST_TEST(asked.size() == 3u);    // 1, 3, and the miss at 4
  asked.clear();
  hit = index.longest_prefix(chain);
  BOOST_TEST(hit.blocks == 4u);
  BOOST_TEST(hit.revalidated == 0u);
  BOOST_TEST(asked.size() == 1u); // only the real miss costs a probe
}

BOOST_AUTO_TEST_CASE(erase_forgets_a_block) {
  const auto chain = chain_of(3);
  check_index index;
  for (const auto& key : chain)
    index.insert(key);
  BOOST_TEST(index.erase(chain[1]));
  BOOST_TEST(!index.erase(chain[1]));
  BOOST_TEST(index.longest_prefix(chain).blocks == 1u);
  BOOST_TEST(index.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
