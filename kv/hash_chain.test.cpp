#include "kv/hash_chain.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <numeric>
#include <set>

#include <xxhash.h>

using namespace deepinfer::kv;

namespace {

std::vector<token_id> tokens(std::size_t n, token_id first = 1000) {
  std::vector<token_id> out(n);
  std::iota(out.begin(), out.end(), first);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(hash_chain_suite)

BOOST_AUTO_TEST_CASE(keys_cover_only_full_blocks) {
  hash_chain chain{model_fingerprint::of("m")};
  BOOST_TEST(chain.keys(tokens(127)).size() == 0u);
  BOOST_TEST(chain.keys(tokens(128)).size() == 1u);
  BOOST_TEST(chain.keys(tokens(300)).size() == 2u);
}

BOOST_AUTO_TEST_CASE(keys_follow_the_documented_definition) {
  // h0 = XXH3-128(fp || tokens[0,128)), h1 = XXH3-128(h0 || tokens[128,256)), seeded by the fp.
  const auto fp = model_fingerprint::of("ced_moe/tiny;kv=f32");
  const auto t = tokens(256);
  const auto keys = hash_chain{fp}.keys(t);
  BOOST_REQUIRE_EQUAL(keys.size(), 2u);
  auto expect = [&](block_key parent, std::size_t block) {
    std::vector<unsigned char> buf(16 + 512);
    std::memcpy(buf.data(), &parent.lo, 8);
    std::memcpy(buf.data() + 8, &parent.hi, 8);
    std::memcpy(buf.data() + 16, t.data() + block * 128, 512);
    const auto h = XXH3_128bits_withSeed(buf.data(), buf.size(), fp.value.lo ^ fp.value.hi);
    return block_key{h.low64, h.high64};
  };
  BOOST_TEST((keys[0] == expect(fp.value, 0)));
  BOOST_TEST((keys[1] == expect(keys[0], 1)));
}

BOOST_AUTO_TEST_CASE(fingerprint_changes_every_key) {
  const auto t = tokens(128 * 64);
  const auto a = hash_chain{model_fingerprint::of("model-a;bf16")}.keys(t);
  const auto b = hash_chain{model_fingerprint::of("model-a;fp8")}.keys(t);
  BOOST_REQUIRE_EQUAL(a.size(), 64u);
  std::set<block_key> in_a(a.begin(), a.end());
  for (const auto& key : b)
    BOOST_TEST(in_a.count(key) == 0u);
}

BOOST_AUTO_TEST_CASE(a_key_depends_on_its_whole_prefix) {
  hash_chain chain{model_fingerprint::of("m")};
  auto t = tokens(128 * 4);
  const auto base = chain.keys(t);
  t[2 * 128 + 5] += 1; // inside block 2
  const auto changed = chain.keys(t);
  BOOST_TEST((changed[0] == base[0]));
  BOOST_TEST((changed[1] == base[1]));
  BOOST_TEST((changed[2] != base[2]));
  BOOST_TEST((changed[3] != base[3])); // same tokens, different parent
}

BOOST_AUTO_TEST_CASE(extend_continues_a_chain_incrementally) {
  hash_chain chain{model_fingerprint::of("m")};
  const auto t = tokens(128 * 5 + 7);
  std::vector<block_key> incremental;
  chain.extend(incremental, std::span{t}.first(200));
  BOOST_TEST(incremental.size() == 1u);
  chain.extend(incremental, t);
  BOOST_TEST((incremental == chain.keys(t)));
}

BOOST_AUTO_TEST_CASE(salted_chains_share_no_key_and_the_shared_salt_changes_nothing) {
  hash_chain chain{model_fingerprint::of("m")};
  const auto t = tokens(128 * 3);
  const auto base = chain.keys(t);
  BOOST_TEST((chain.salted(cache_salt::of("")).keys(t) == base));
  BOOST_TEST(cache_salt::of("").shared());
  const auto a = chain.salted(cache_salt::of("tenant-a")).keys(t);
  const auto b = chain.salted(cache_salt::of("tenant-b")).keys(t);
  for (std::size_t i = 0; i < base.size(); ++i) {
    BOOST_TEST((a[i] != base[i]));
    BOOST_TEST((a[i] != b[i]));
  }
  BOOST_TEST((chain.salted(cache_salt::of("tenant-a")).keys(t) == a)); // deterministic
  // Another model with the same salt is still another chain.
  BOOST_TEST((hash_chain{model_fingerprint::of("m2")}.salted(cache_salt::of("tenant-a")).keys(t)[0] != a[0]));
}

BOOST_AUTO_TEST_CASE(hex_round_trips_and_rejects_garbage) {
  const block_key key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  BOOST_TEST(key.to_hex() == "fedcba98765432100123456789abcdef");
  BOOST_TEST((block_key::from_hex(key.to_hex()) == key));
  BOOST_TEST(!block_key::from_hex("xyz").has_value());
  BOOST_TEST(!block_key::from_hex("FEDCBA98765432100123456789ABCDEF").has_value());
}

BOOST_AUTO_TEST_SUITE_END()
