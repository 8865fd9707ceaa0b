// The CUDA backend (issue 22). Without a device (CI, most machines) the only case that runs is
// the clear error; the others print why they skip. On a GPU machine (scripts/device-check.sh) they
// check the promise the backend makes: the device's products are the CPU kernels' bits, so a
// whole forward, batched decode and a prefix hit give the CPU's logits and tokens exactly.
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/backends/cpu/cpu_backend.hpp"
#include "engine/backends/cuda_devices.hpp"
#include "engine/backends/make_backend.hpp"
#include "engine/testing/engine_fixture.hpp"
#include "engine/testing/ep_test_run.hpp"
#include "engine/testing/random_floats.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

/// Whether a CUDA backend can be made here, and why not (probed once per process).
const backend_result& cuda_probe() {
  static const backend_result probe = make_cuda_backend(backend_config{backend_kind::cuda, 2, std::nullopt, 0});
  return probe;
}

/// Precondition of the cases that run on a device: without one they are skipped with the reason
/// (scripts/list_skips.sh prints it in the CI log).
struct needs_a_cuda_device {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    if (cuda_probe().value)
      return true;
    boost::test_tools::assertion_result r{false};
    r.message() << "needs a CUDA device: " << cuda_probe().error;
    return r;
  }
};

/// Precondition of the no-device case: on a GPU machine there is no missing device to report.
struct has_no_cuda_device {
  boost::test_tools::assertion_result operator()(boost::unit_test::test_unit_id) const {
    if (query_cuda_devices().devices.empty())
      return true;
    boost::test_tools::assertion_result r{false};
    r.message() << "a CUDA device is present, so the no-device error cannot occur here";
    return r;
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct greedy_run {
  std::vector<float> prefill_logits;
  std::vector<std::vector<float>> step_logits;
  std::vector<int32_t> tokens;
};

rank_engine::config engine_config(backend_kind kind) {
  rank_engine::config cfg{64, 2, fixture_isa()};
  cfg.backend = kind;
  return cfg;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_backend)

BOOST_AUTO_TEST_CASE(asking_for_cuda_without_a_device_is_a_clear_error_naming_the_way_out,
                     *boost::unit_test::precondition(has_no_cuda_device{})) {
  auto r = make_backend(backend_config{backend_kind::cuda, 1, std::nullopt, 0});
  BOOST_TEST(!r.value);
  BOOST_TEST((r.error.find("no usable CUDA device") != std::string::npos ||
              r.error.find("this build has no CUDA backend") != std::string::npos),
             r.error);
  BOOST_TEST(r.error.find("--backend cpu") != std::string::npos, r.error);
  // The engine refuses to load rather than fall back silently to the CPU.
  auto loaded = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cuda));
  BOOST_TEST(!loaded.engine);
  BOOST_TEST(loaded.error.find("backend cuda") != std::string::npos, loaded.error);
  // The CPU backend is always there.
  BOOST_TEST(make_backend(backend_config{}).value != nullptr);
}

BOOST_AUTO_TEST_CASE(products_equal_the_cpu_kernels_bit_for_bit_whatever_the_shape,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  auto gpu = make_cuda_backend(backend_config{backend_kind::cuda, 2, std::nullopt, 0});
  BOOST_REQUIRE(gpu.value);
  cpu_backend cpu{cpu_backend::config{1, kernels::cpu_isa::portable}};
  uint32_t seed = 1;
  for (int64_t k : {1, 7, 64, 257, 1024})
    for (int64_t n : {1, 16, 100, 513, 1030})
      for (int64_t m : {1, 2, 4, 5, 16, 17, 33, 130, 300}) {
        auto x = random_floats(m * k, seed++);
        auto w = random_floats(n * k, seed++);
        auto y0 = random_floats(m * n, seed++);
        for (bool acc : {false, true}) {
          auto yc = y0, yg = y0;
          cpu.matmul(x.data(), m, k, w.data(), n, yc.data(), acc);
          gpu.value->matmul(x.data(), m, k, w.data(), n, yg.data(), acc);
          BOOST_TEST(same_bits(yc, yg), "m=" << m << " k=" << k << " n=" << n << " accumulate=" << acc);
        }
      }
}

BOOST_AUTO_TEST_CASE(a_row_does_not_depend_on_its_batch_and_a_released_weight_is_uploaded_again,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  auto gpu = make_cuda_backend(backend_config{backend_kind::cuda, 2, std::nullopt, 0});
  BOOST_REQUIRE(gpu.value);
  auto& b = *gpu.value;
  const int64_t m = 300, k = 384, n = 700;
  auto x = random_floats(m * k, 5);
  auto w = random_floats(n * k, 6);
  b.prepare_weight(w.data(), n, k);
  BOOST_TEST(b.prepared_weight_bytes() == static_cast<std::size_t>(n * k) * sizeof(float));
  std::vector<float> all(static_cast<std::size_t>(m * n));
  b.matmul(x.data(), m, k, w.data(), n, all.data());
  for (int64_t r : {0, 1, 37, 128, 299}) {
    std::vector<float> one(static_cast<std::size_t>(n));
    b.matmul(x.data() + r * k, 1, k, w.data(), n, one.data());
    BOOST_TEST(std::memcmp(one.data(), all.data() + r * n, sizeof(float) * n) == 0, "row " << r);
  }
  // A weight changed in place after release is uploaded anew, never served from the old copy.
  b.release_weight(w.data(), n, k);
  BOOST_TEST(b.prepared_weight_bytes() == 0u);
  for (auto& v : w)
    v = -v;
  std::vector<float> negated(static_cast<std::size_t>(m * n));
  b.matmul(x.data(), m, k, w.data(), n, negated.data());
  for (std::size_t i = 0; i < all.size(); ++i)
    BOOST_REQUIRE(negated[i] == -all[i]);
}

BOOST_AUTO_TEST_CASE(a_forward_on_the_device_gives_the_cpu_logits_and_tokens_exactly,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  auto cpu = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cpu));
  auto gpu = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cuda));
  BOOST_REQUIRE_MESSAGE(cpu.engine, cpu.error);
  BOOST_REQUIRE_MESSAGE(gpu.engine, gpu.error);
  const auto prompt = random_tokens(700, 77); // past the indexer's top-k: the gathered path runs
  for (auto mode : {decoder_mode::exact, decoder_mode::bounded}) {
    std::vector<greedy_run> runs;
    for (auto* e : {cpu.engine.get(), gpu.engine.get()}) {
      prefill_request req;
      req.seq = next_seq();
      req.tokens = prompt;
      req.mode = mode;
      req.sampling.max_tokens = 1 << 20;
      greedy_run run;
      auto p = e->prefill(req);
      BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
      run.prefill_logits = p.logits;
      run.tokens.push_back(p.first.id);
      const std::vector<sequence_id> ids{req.seq};
      for (int s = 0; s < 4; ++s) {
        std::vector<float> lg;
        auto d = e->decode_step(ids, &lg);
        BOOST_REQUIRE(d[0].status == engine_status::ok);
        run.step_logits.push_back(lg);
        run.tokens.push_back(d[0].token.id);
      }
      e->free(req.seq);
      runs.push_back(std::move(run));
    }
    BOOST_TEST(same_bits(runs[0].prefill_logits, runs[1].prefill_logits), "prefill logits, mode " << (mode == decoder_mode::exact ? "exact" : "bounded"));
    for (std::size_t s = 0; s < runs[0].step_logits.size(); ++s)
      BOOST_TEST(same_bits(runs[0].step_logits[s], runs[1].step_logits[s]), "decode step " << s);
    BOOST_TEST(runs[0].tokens == runs[1].tokens, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(fifty_prompts_decoded_as_one_batch_on_the_device_give_the_cpu_greedy_text,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  auto cpu = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cpu));
  auto gpu = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cuda));
  BOOST_REQUIRE_MESSAGE(cpu.engine, cpu.error);
  BOOST_REQUIRE_MESSAGE(gpu.engine, gpu.error);
  constexpr int prompts = 50, steps = 16;
  std::mt19937 rng{2026};
  std::vector<std::vector<int32_t>> texts(prompts);
  std::vector<std::vector<int32_t>> alone(prompts);
  std::vector<sequence_id> batch;
  for (int i = 0; i < prompts; ++i) {
    texts[i] = random_tokens(static_cast<int64_t>(5 + rng() % 400), 1000 + static_cast<uint32_t>(i));
    // On the CPU, each prompt alone.
    prefill_request req;
    req.seq = next_seq();
    req.tokens = texts[i];
    req.sampling.max_tokens = 1 << 20;
    auto p = cpu.engine->prefill(req);
    BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
    alone[i].push_back(p.first.id);
    const std::vector<sequence_id> one{req.seq};
    for (int s = 0; s < steps; ++s)
      alone[i].push_back(cpu.engine->decode_step(one)[0].token.id);
    cpu.engine->free(req.seq);
    // On the device, prefilled one by one and decoded as one batch of 50.
    req.seq = next_seq();
    auto g = gpu.engine->prefill(req);
    BOOST_REQUIRE_MESSAGE(g.status == engine_status::ok, g.error);
    texts[i] = {g.first.id};
    batch.push_back(req.seq);
  }
  for (int s = 0; s < steps; ++s) {
    auto out = gpu.engine->decode_step(batch);
    BOOST_REQUIRE_EQUAL(out.size(), batch.size());
    for (int i = 0; i < prompts; ++i)
      texts[i].push_back(out[static_cast<std::size_t>(i)].token.id);
  }
  for (int i = 0; i < prompts; ++i)
    BOOST_TEST(texts[i] == alone[i], "prompt " << i);
}

BOOST_AUTO_TEST_CASE(a_prefix_hit_on_the_device_changes_no_bit,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  auto gpu = rank_engine::load(tiny_model_dir(), engine_config(backend_kind::cuda));
  BOOST_REQUIRE_MESSAGE(gpu.engine, gpu.error);
  auto& e = *gpu.engine;
  const auto prompt = random_tokens(1500, 31);
  prefill_request first;
  first.seq = next_seq();
  first.tokens = {prompt.begin(), prompt.begin() + 1100};
  first.mode = decoder_mode::exact;
  first.sampling.max_tokens = 1 << 20;
  BOOST_REQUIRE(e.prefill(first).status == engine_status::ok);
  BOOST_REQUIRE(e.snapshot_end(first.seq).value_or(-1) == 1024);
  prefill_request cold;
  cold.seq = next_seq();
  cold.tokens = prompt;
  cold.mode = decoder_mode::exact;
  cold.sampling.max_tokens = 1 << 20;
  auto c = e.prefill(cold);
  BOOST_REQUIRE(c.status == engine_status::ok);
  prefill_request hot = cold;
  hot.seq = next_seq();
  hot.hit_length = 1024;
  hot.snapshot = *e.export_snapshot(first.seq);
  for (int64_t b = 0; b < 8; ++b)
    hot.hit_blocks.push_back(*e.export_block(first.seq, b));
  auto h = e.prefill(hot);
  BOOST_REQUIRE_MESSAGE(h.status == engine_status::ok, h.error);
  BOOST_TEST(same_bits(h.logits, c.logits));
  for (int s = 0; s < 8; ++s) {
    std::vector<float> lc, lh;
    auto dc = e.decode_step(std::vector<sequence_id>{cold.seq}, &lc);
    auto dh = e.decode_step(std::vector<sequence_id>{hot.seq}, &lh);
    BOOST_TEST(dc[0].token.id == dh[0].token.id, "step " << s);
    BOOST_TEST(same_bits(lc, lh), "step " << s);
  }
  for (auto s : {first.seq, cold.seq, hot.seq})
    e.free(s);
}

// Two device ranks in one EP group (the in-process exchange: this stage's activations are host
// buffers), experts re-placed mid-decode so replicas are released and uploaded on the device: the
// single CPU rank's logits, bit for bit. With one GPU both ranks share it (device_slot mod count).
BOOST_AUTO_TEST_CASE(an_ep2_group_of_device_ranks_gives_the_single_cpu_ranks_logits_through_a_re_placement,
                     *boost::unit_test::precondition(needs_a_cuda_device{})) {
  std::vector<std::unique_ptr<rank_engine>> ranks;
  for (int r = 0; r < 2; ++r) {
    rank_engine::config cfg{48, 1, fixture_isa()};
    cfg.backend = backend_kind::cuda;
    cfg.device_slot = r;
    auto loaded = rank_engine::load(tiny_model_dir(), cfg);
    BOOST_REQUIRE_MESSAGE(loaded.engine, loaded.error);
    ranks.push_back(std::move(loaded.engine));
  }
  require_group_matches_reference(ranks, "CUDA EP2");
}

BOOST_AUTO_TEST_SUITE_END()
