// The prefix cache applies the hit policy: blocks up to L1, the SWA snapshot ending there when one
// is kept (locally, or from the pluggable remote source), none otherwise.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "kv/prefix_cache.hpp"
#include "kv/block_header.hpp"
#include "kv/hash_chain.hpp"

using namespace deepinfer;
using deepinfer::kv::prefix_cache;

namespace {

struct temp_root {
  std::filesystem::path path;
  temp_root() {
    std::string pattern = (std::filesystem::temp_directory_path() / "prefix_cache_XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temp_root() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::vector<int32_t> tokens(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t)
    x = static_cast<int32_t>(rng() % 129280);
  return t;
}

/// A recognizable payload for block i.
std::optional<std::vector<std::byte>> payload(int64_t i) {
  return std::vector<std::byte>(1000 + static_cast<std::size_t>(i), std::byte{static_cast<unsigned char>(i)});
}

} // namespace

BOOST_AUTO_TEST_SUITE(prefix_cache_hits)

// Recycled buffers (of other sizes, holding other blocks' bytes) are filled exactly again.
BOOST_AUTO_TEST_CASE(lookups_into_recycled_buffers_return_the_same_blocks) {
  temp_root root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 2);
  BOOST_TEST(cache->store(prompt, 7, payload) == 7);
  for (int round = 0; round < 3; ++round) {
    auto hit = cache->lookup(prompt);
    BOOST_REQUIRE(hit.blocks.size() == 6u);
    for (int64_t i = 0; i < 6; ++i)
      BOOST_TEST((hit.blocks[static_cast<std::size_t>(i)] == *payload(i)), "round " << round << " block " << i);
    std::reverse(hit.blocks.begin(), hit.blocks.end()); // hand them out to other blocks next time
    cache->recycle(std::move(hit.blocks));
  }
}

// The two halves a prefill rank overlaps with compute: the plan (metadata only) names the blocks;
// the read brings them, or fewer when one vanished in between (the plan then no longer holds).
BOOST_AUTO_TEST_CASE(plan_then_read_and_a_block_gone_in_between) {
  temp_root root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 3);
  BOOST_TEST(cache->store(prompt, 7, payload) == 7);
  auto plan = cache->plan(prompt);
  BOOST_TEST(plan.length == 768);
  BOOST_REQUIRE(plan.keys.size() == 6u);
  auto blocks = cache->read(plan);
  BOOST_REQUIRE(blocks.size() == 6u);
  for (int64_t i = 0; i < 6; ++i)
    BOOST_TEST((blocks[static_cast<std::size_t>(i)] == *payload(i)));
  // Block 3's file goes (GC, another node) after the plan: the read stops before it.
  int removed = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(root.path))
    if (e.is_regular_file() && e.path().filename().string().find(plan.keys[3].to_hex()) != std::string::npos)
      removed += std::filesystem::remove(e.path()) ? 1 : 0;
  BOOST_REQUIRE(removed == 1);
  BOOST_TEST(cache->read(plan).size() == 3u);
  BOOST_TEST(cache->plan(prompt).length == 384); // and CHECK forgot it
}

BOOST_AUTO_TEST_CASE(hit_carries_the_snapshot_ending_at_l1_from_memory_or_the_remote_source) {
  temp_root root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 1);
  BOOST_TEST(cache->lookup(prompt).length == 0);
  BOOST_TEST(cache->store(prompt, 7, payload) == 7);
  // L = 1000: cap 866, L1 = 768 (6 blocks); no snapshot there yet: the engine will replay.
  auto hit = cache->lookup(prompt);
  BOOST_TEST(hit.length == 768);
  BOOST_REQUIRE(hit.blocks.size() == 6u);
  BOOST_TEST((hit.blocks[5] == *payload(5)));
  BOOST_TEST(!hit.snapshot);
  // A snapshot at 896 (past L1) does not serve this prompt; one at 768 does.
  BOOST_TEST(cache->store_snapshot(prompt, 896, {std::byte{9}}));
  BOOST_TEST(!cache->lookup(prompt).snapshot);
  BOOST_TEST(cache->store_snapshot(prompt, 768, {std::byte{7}, std::byte{6}}));
  hit = cache->lookup(prompt);
  BOOST_REQUIRE(hit.snapshot);
  BOOST_TEST((*hit.snapshot == std::vector<std::byte>{std::byte{7}, std::byte{6}}));
  BOOST_TEST(cache->snapshots() == 2u);
  // Refused: not on a block boundary, or past the tokens.
  BOOST_TEST(!cache->store_snapshot(prompt, 700, {}));
  BOOST_TEST(!cache->store_snapshot(prompt, 1024, {}));

  // Another process on the same root sees the blocks but keeps no snapshot of its own: it asks
  // the remote source, with the key of the block the window ends with.
  auto other = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(other, err);
  BOOST_TEST(!other->lookup(prompt).snapshot);
  auto keys = kv::hash_chain(kv::model_fingerprint::of("model-a")).keys(prompt);
  std::vector<kv::block_key> asked;
  other->set_snapshot_source([&](const kv::block_key& k) -> kv::swa_snapshot {
    asked.push_back(k);
    return k == keys[5] ? std::make_shared<const std::vector<std::byte>>(1, std::byte{5}) : nullptr;
  });
  hit = other->lookup(prompt);
  BOOST_TEST(hit.length == 768);
  BOOST_REQUIRE(hit.snapshot);
  BOOST_TEST((*hit.snapshot == std::vector<std::byte>(1, std::byte{5})));
  BOOST_REQUIRE(asked.size() == 1u);
  BOOST_TEST((asked[0] == keys[5]));
  // Another model's cache on the same root shares nothing.
  auto model_b = prefix_cache::open({root.path.string(), "model-b"}, &err);
  BOOST_REQUIRE_MESSAGE(model_b, err);
  BOOST_TEST(model_b->lookup(prompt).length == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(prefix_cache_lifecycle)

// The lifecycle a kvstore node's GC worker runs: agent blocks expire after their class's TTL
// before chatbot ones, and a store past its budget is evicted to the low watermark, least
// recently used first; CHECK stops answering what went.
BOOST_AUTO_TEST_CASE(expired_agent_blocks_go_first_and_the_store_stays_under_its_high_watermark) {
  temp_root root;
  std::string err;
  auto clock = std::make_shared<deepinfer::kv::manual_clock>(1'700'000'000'000);
  prefix_cache::config cfg{root.path.string(), "model-a"};
  cfg.time = clock;
  cfg.ttl = deepinfer::kv::ttl_table{3'600'000, 7'200'000}; // agent 1 h, chatbot 2 h
  auto cache = prefix_cache::open(cfg, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto agent = tokens(1000, 11), chat = tokens(1000, 12);
  BOOST_TEST(cache->store(agent, 7, payload, {}, deepinfer::kv::traffic_class::agent) == 7);
  BOOST_TEST(cache->store(chat, 7, payload, {}, deepinfer::kv::traffic_class::chatbot) == 7);
  clock->advance(1'800'000);
  BOOST_TEST(cache->run_gc().expired == 0u); // nothing is an hour old yet
  clock->advance(2'000'000);                 // 63 min: past the agent TTL only
  auto r = cache->run_gc();
  BOOST_TEST(r.expired == 7u);
  BOOST_TEST(cache->lookup(agent).blocks.empty());
  BOOST_TEST(cache->lookup(chat).blocks.size() == 6u); // and the lookup counts as a use
  clock->advance(7'300'000);
  BOOST_TEST(cache->run_gc().expired == 7u);
  BOOST_TEST(cache->lookup(chat).blocks.empty());

  // A budget: above the high watermark the oldest go, down to the low one.
  prefix_cache::config small = cfg;
  const uint64_t block = 1003; // payload(i) is 1000 + i bytes
  small.gc_high_watermark_bytes = 12 * block;
  small.gc_low_watermark_bytes = 8 * block;
  cache.reset();
  cache = prefix_cache::open(small, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto older = tokens(1000, 21), newer = tokens(1000, 22);
  BOOST_TEST(cache->store(older, 7, payload) == 7);
  clock->advance(1000);
  BOOST_TEST(cache->store(newer, 7, payload) == 7);
  BOOST_TEST(cache->stored_bytes() > small.gc_high_watermark_bytes);
  r = cache->run_gc();
  BOOST_TEST(r.evicted >= 6u);
  BOOST_TEST(cache->stored_bytes() <= small.gc_low_watermark_bytes);
  BOOST_TEST(cache->lookup(older).blocks.empty());      // least recently used: gone
  BOOST_TEST(cache->lookup(newer).blocks.size() == 6u); // the newer prompt is still a hit
}

// CHECK's index is rebuilt from the store when a process opens it: blocks another (now gone)
// process wrote are hits at once.
BOOST_AUTO_TEST_CASE(a_reopened_store_answers_check_from_its_scan) {
  temp_root root;
  std::string err;
  auto prompt = tokens(1000, 31);
  {
    auto first = prefix_cache::open({root.path.string(), "model-a"}, &err);
    BOOST_REQUIRE_MESSAGE(first, err);
    BOOST_TEST(first->store(prompt, 7, payload) == 7);
  }
  auto again = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(again, err);
  BOOST_TEST(again->plan(prompt).keys.size() == 6u);
}

// Issue 17: the decode side queues blocks as they arrive or fill; the writer thread writes them.
// Queued blocks hit at once, each block is exported once however often it is offered, and what
// lands on disk is what `store` writes.
BOOST_AUTO_TEST_CASE(store_async_hits_at_once_exports_each_block_once_and_writes_what_store_writes) {
  temp_root root, sync_root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 41);
  std::vector<int64_t> exported;
  auto counted = [&](int64_t i) {
    exported.push_back(i);
    return payload(i);
  };
  // The prompt as it arrives (5 blocks), then two more as decode fills them: 7 exports in all.
  BOOST_TEST(cache->store_async(prompt, 0, 5, counted, {}, kv::traffic_class::agent) == 5);
  auto hit = cache->lookup(prompt); // L1 = 768, capped by the 5 queued or written blocks
  BOOST_REQUIRE(hit.blocks.size() == 5u);
  for (int64_t i = 0; i < 5; ++i)
    BOOST_TEST((hit.blocks[static_cast<std::size_t>(i)] == *payload(i)), "block " << i);
  BOOST_TEST(cache->store_async(prompt, 5, 7, counted, {}, kv::traffic_class::agent) == 7);
  // Offered again from 0 (a second sample of the prompt, a handed-off sequence): nothing exported.
  BOOST_TEST(cache->store_async(prompt, 0, 7, counted, {}, kv::traffic_class::agent) == 7);
  BOOST_TEST(cache->store(prompt, 7, counted) == 0);
  BOOST_TEST((exported == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  cache->flush_writes();
  BOOST_TEST(cache->writes().queued == 7u);
  BOOST_TEST(cache->writes().written == 7u);
  // On disk: readable by a process that never saw the queue, with the bytes and class `store`
  // gives, and not exported again by it (CHECK's probe finds them).
  auto reopened = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(reopened, err);
  auto sync = prefix_cache::open({sync_root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(sync, err);
  BOOST_TEST(sync->store(prompt, 7, payload, {}, kv::traffic_class::agent) == 7);
  auto a = reopened->lookup(prompt), b = sync->lookup(prompt);
  BOOST_REQUIRE(a.blocks.size() == 6u);
  BOOST_TEST((a.blocks == b.blocks));
  exported.clear();
  BOOST_TEST(reopened->store_async(prompt, 0, 7, counted) == 7);
  BOOST_TEST(exported.empty());
  // The same files (names, sizes, payload checksums) as `store` writes, stamped with the class
  // they were queued with.
  auto files = [](const std::filesystem::path& p) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    for (auto& e : std::filesystem::recursive_directory_iterator(p)) {
      if (!e.is_regular_file() || e.path().extension() != ".kvb")
        continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::array<char, kv::block_header::size> head{};
      in.read(head.data(), head.size());
      auto h = kv::block_header::decode(std::as_bytes(std::span{head}));
      BOOST_REQUIRE(h);
      BOOST_TEST((h->cls == kv::traffic_class::agent));
      out[e.path().filename().string()] = {h->payload_length, h->payload_checksum};
    }
    return out;
  };
  const auto written = files(root.path);
  BOOST_TEST(written.size() == 7u);
  BOOST_TEST((written == files(sync_root.path)));
}

// A block that fails to export (the engine no longer has it) stops the run there: the caller
// offers it again from that block.
BOOST_AUTO_TEST_CASE(store_async_stops_at_a_block_it_cannot_export) {
  temp_root root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 43);
  auto until3 = [](int64_t i) { return i < 3 ? payload(i) : std::nullopt; };
  BOOST_TEST(cache->store_async(prompt, 0, 7, until3) == 3);
  BOOST_TEST(cache->store_async(prompt, 3, 7, payload) == 7);
  cache->flush_writes();
  BOOST_TEST(cache->plan(prompt).keys.size() == 6u);
}

BOOST_AUTO_TEST_SUITE_END()

// Issue 21: blocks stored for a prompt with image A hit for A at the same place and never for
// image B (the same token ids: both are placeholders) or for the text-only chain.
BOOST_AUTO_TEST_SUITE(prefix_cache_images)

BOOST_AUTO_TEST_CASE(blocks_of_one_image_never_hit_for_another) {
  temp_root root;
  std::string err;
  auto cache = prefix_cache::open({root.path.string(), "model-a"}, &err);
  BOOST_REQUIRE_MESSAGE(cache, err);
  auto prompt = tokens(1000, 3);
  std::fill(prompt.begin() + 20, prompt.begin() + 26, 129264);
  const std::vector<uint8_t> a(96 * 64 * 3, 1), b(96 * 64 * 3, 2);
  const std::vector<kv::image_mark> with_a{{20, 6, kv::image_content_key(96, 64, a)}};
  const std::vector<kv::image_mark> with_b{{20, 6, kv::image_content_key(96, 64, b)}};
  BOOST_TEST(cache->store(prompt, 7, payload, {}, kv::traffic_class::chatbot, with_a) == 7);
  BOOST_TEST(cache->check(prompt, 0, {}, with_a).length == 768);
  BOOST_TEST(cache->lookup(prompt, {}, with_a).blocks.size() == 6u);
  BOOST_TEST(cache->check(prompt, 0, {}, with_b).length == 0);
  BOOST_TEST(cache->lookup(prompt, {}, with_b).blocks.empty());
  BOOST_TEST(cache->check(prompt).length == 0);
}

BOOST_AUTO_TEST_SUITE_END()
