// The CUDA backend's host side (`device_backend`: staging, output layouts, the weight cache, one
// trip per group of products) on every machine, over `testing::emulated_device` in place of the
// GPU: the CPU backend's bits, for single products, shared-input groups, gated MLPs, whole
// forwards, batched decode and an EP group through a re-placement.
#include <cstring>
#include <memory>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/device_backend.hpp"
#include "engine/testing/emulated_device.hpp"
#include "engine/testing/engine_fixture.hpp"
#include "engine/testing/ep_test_run.hpp"
#include "engine/testing/random_floats.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

struct on_emulated_device {
  emulated_device* device;
  std::unique_ptr<device_backend> backend;
};

on_emulated_device make(int threads = 2) {
  auto d = std::make_unique<emulated_device>();
  auto* raw = d.get();
  return {raw, std::make_unique<device_backend>(device_backend::config{threads, fixture_isa()}, std::move(d))};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

BOOST_AUTO_TEST_SUITE(device_backend_suite)

BOOST_AUTO_TEST_CASE(products_groups_gated_mlps_and_expert_layers_give_the_cpu_bits_in_one_trip_each) {
  auto [dev, b] = make();
  cpu_backend cpu{cpu_backend::config{1, kernels::cpu_isa::portable}};
  const int64_t m = 37, k = 96, n1 = 50, n2 = 130, f = 72;
  auto x = random_floats(m * k, 1), w1 = random_floats(n1 * k, 2), w2 = random_floats(n2 * k, 3);
  auto y0 = random_floats(m * n2, 4);
  // 1. One product, with and without accumulate.
  for (bool acc : {false, true}) {
    auto yc = y0, yd = y0;
    cpu.matmul(x.data(), m, k, w2.data(), n2, yc.data(), acc);
    b->matmul(x.data(), m, k, w2.data(), n2, yd.data(), acc);
    BOOST_TEST(same_bits(yc, yd), "accumulate " << acc);
  }
  // 2. Products sharing x (the second accumulating): one trip, both outputs in place.
  std::vector<float> a_c(static_cast<std::size_t>(m * n1)), a_d = a_c;
  auto b_c = y0, b_d = y0;
  cpu.matmul(x.data(), m, k, w1.data(), n1, a_c.data(), false);
  cpu.matmul(x.data(), m, k, w2.data(), n2, b_c.data(), true);
  const auto trips = b->trips();
  const backend::product both[] = {{w1.data(), n1, a_d.data()}, {w2.data(), n2, b_d.data(), true}};
  b->matmul_shared_input(x.data(), m, k, both);
  BOOST_TEST(b->trips() == trips + 1);
  BOOST_TEST(same_bits(a_c, a_d));
  BOOST_TEST(same_bits(b_c, b_d));
  // 3. A gated MLP (h = k): the default's steps on the CPU, one trip on the device.
  auto g1 = random_floats(f * k, 5), g3 = random_floats(f * k, 6), g2 = random_floats(k * f, 7);
  for (bool acc : {false, true}) {
    auto out_c = random_floats(m * k, 8), out_d = out_c;
    std::vector<float> g(static_cast<std::size_t>(m * f)), u = g;
    cpu.gated_mlp(x.data(), m, k, g1.data(), g3.data(), f, g2.data(), out_c.data(), acc, g.data(), u.data());
    const auto before = b->trips();
    b->gated_mlp(x.data(), m, k, g1.data(), g3.data(), f, g2.data(), out_d.data(), acc, g.data(), u.data());
    BOOST_TEST(b->trips() == before + 1);
    BOOST_TEST(same_bits(out_c, out_d), "gated MLP, accumulate " << acc);
  }
  // 4. A MoE layer's experts at once (one with no rows): one trip, each expert's rows as alone.
  {
    auto e1 = random_floats(f * k, 9), e3 = random_floats(f * k, 10), e2 = random_floats(k * f, 11);
    const backend::expert_mlp experts[] = {{g1.data(), g3.data(), g2.data(), 5},
                                           {e1.data(), e3.data(), e2.data(), 0},
                                           {e1.data(), e3.data(), e2.data(), m - 5}};
    std::vector<float> out_c(static_cast<std::size_t>(m * k)), out_d = out_c;
    std::vector<float> g(static_cast<std::size_t>(m * f)), u = g;
    cpu.gated_mlps(x.data(), k, f, experts, out_c.data(), g.data(), u.data());
    const auto before = b->trips();
    b->gated_mlps(x.data(), k, f, experts, out_d.data(), g.data(), u.data());
    BOOST_TEST(b->trips() == before + 1);
    BOOST_TEST(same_bits(out_c, out_d), "gated MLPs");
    for (auto* w : {&e1, &e3})
      b->release_weight(w->data(), f, k);
    b->release_weight(e2.data(), k, f);
  }
  // 5. Weights are kept on the device, and given back when released.
  const auto kept = b->prepared_weight_bytes();
  BOOST_TEST(kept == static_cast<std::size_t>(n1 * k + n2 * k + 3 * f * k) * sizeof(float));
  for (auto* w : {&w1, &w2})
    b->release_weight(w->data(), w == &w1 ? n1 : n2, k);
  BOOST_TEST(b->prepared_weight_bytes() == static_cast<std::size_t>(3 * f * k) * sizeof(float));
  // A weight changed in place after its release is uploaded anew (the CPU's packed copy is
  // dropped too, for the reference).
  cpu.release_weight(w2.data(), n2, k);
  for (auto& v : w2)
    v = -v;
  auto yc = y0, yd = y0;
  cpu.matmul(x.data(), m, k, w2.data(), n2, yc.data(), false);
  b->matmul(x.data(), m, k, w2.data(), n2, yd.data(), false);
  BOOST_TEST(same_bits(yc, yd));
}

BOOST_AUTO_TEST_CASE(a_forward_and_batched_decode_on_the_device_backend_give_the_cpu_logits) {
  auto cpu = rank_engine::load(tiny_model_dir(), rank_engine::config{64, 2, fixture_isa()});
  auto emu = make();
  auto* dev = emu.device;
  auto on_device = rank_engine::load(tiny_model_dir(), rank_engine::config{64, 2, fixture_isa()}, std::move(emu.backend));
  BOOST_REQUIRE_MESSAGE(cpu.engine, cpu.error);
  BOOST_REQUIRE_MESSAGE(on_device.engine, on_device.error);
  // Prompts past the indexer's top-k and short ones, in exact and bounded mode; then all decoded
  // as one batch.
  std::vector<std::vector<sequence_id>> batches(2);
  std::vector<std::vector<std::vector<float>>> logits(2);
  int i = 0;
  for (int64_t len : {700, 5, 300, 129}) {
    for (int e = 0; e < 2; ++e) {
      auto& eng = e == 0 ? *cpu.engine : *on_device.engine;
      prefill_request req;
      req.seq = next_seq();
      req.tokens = random_tokens(len, 500 + static_cast<uint64_t>(i));
      req.mode = i % 2 == 0 ? decoder_mode::exact : decoder_mode::bounded;
      req.sampling.max_tokens = 1 << 20;
      auto p = eng.prefill(req);
      BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
      logits[static_cast<std::size_t>(e)].push_back(p.logits);
      batches[static_cast<std::size_t>(e)].push_back(req.seq);
    }
    ++i;
  }
  for (int s = 0; s < 3; ++s)
    for (int e = 0; e < 2; ++e) {
      std::vector<float> lg;
      auto& eng = e == 0 ? *cpu.engine : *on_device.engine;
      auto out = eng.decode_step(batches[static_cast<std::size_t>(e)], &lg);
      for (auto& o : out)
        BOOST_REQUIRE(o.status == engine_status::ok);
      logits[static_cast<std::size_t>(e)].push_back(lg);
    }
  BOOST_REQUIRE_EQUAL(logits[0].size(), logits[1].size());
  for (std::size_t j = 0; j < logits[0].size(); ++j)
    BOOST_TEST(same_bits(logits[0][j], logits[1][j]), "logits " << j);
  BOOST_TEST(dev->waits.load() > 0u);
}

BOOST_AUTO_TEST_CASE(an_ep2_group_on_device_backends_gives_the_single_cpu_ranks_logits_through_a_re_placement) {
  std::vector<std::unique_ptr<rank_engine>> ranks;
  for (int r = 0; r < 2; ++r) {
    auto emu = make(1);
    auto loaded = rank_engine::load(tiny_model_dir(), rank_engine::config{48, 1, fixture_isa()}, std::move(emu.backend));
    BOOST_REQUIRE_MESSAGE(loaded.engine, loaded.error);
    ranks.push_back(std::move(loaded.engine));
  }
  require_group_matches_reference(ranks, "device backend EP2");
}

// Memory planning: a model whose weights would not leave the staging reserve free on the device
// is refused at load with what is short and what to do, before anything is uploaded.
BOOST_AUTO_TEST_CASE(a_model_too_large_for_the_device_is_refused_at_load_saying_what_is_short) {
  auto emu = make();
  emu.device->capacity_bytes = device_backend::staging_reserve + (std::size_t{1} << 20);
  auto loaded = rank_engine::load(tiny_model_dir(), rank_engine::config{16, 1, fixture_isa()}, std::move(emu.backend));
  BOOST_TEST(!loaded.engine);
  BOOST_TEST(loaded.error.find("the model's weights need") != std::string::npos, loaded.error);
  BOOST_TEST(loaded.error.find("use a device with more memory") != std::string::npos, loaded.error);
}

BOOST_AUTO_TEST_SUITE_END()
