#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/rank_engine.hpp"
#include "engine/testing/random_tokens.hpp"
#include "engine/testing/test_models.hpp"

namespace deepinfer::engine::testing {

/// The ISA the shared engine runs: `-- --cpu-isa NAME` on the test binary's command line (CTest
/// runs the model-level suites a second time with avx2), else the best this CPU runs. A CPU that
/// cannot run the one asked for ends the process with CTest's skip code and says why.
inline kernels::cpu_isa fixture_isa() {
  static const kernels::cpu_isa isa = [] {
    const auto& m = boost::unit_test::framework::master_test_suite();
    std::string name = "auto";
    for (int i = 1; i + 1 < m.argc; ++i)
      if (std::string{m.argv[i]} == "--cpu-isa")
        name = m.argv[i + 1];
    const auto c = kernels::choose_cpu_isa(name);
    if (!c.isa) {
      std::printf("SKIPPED: the engine tests were asked for --cpu-isa %s: %s\n", name.c_str(), c.error.c_str());
      std::fflush(stdout);
      std::_Exit(77);
    }
    BOOST_TEST_MESSAGE("engine tests run the " << kernels::to_string(*c.isa) << " kernels (CPU: "
                                               << kernels::cpu_feature_summary() << ")");
    return *c.isa;
  }();
  return isa;
}

/// One engine on the tiny model, shared by the tests of a process (loading costs ~0.5 s).
inline rank_engine& tiny_engine() {
  static std::unique_ptr<rank_engine> e = [] {
    auto r = rank_engine::load(tiny_model_dir(), rank_engine::config{512, 2, fixture_isa()});
    if (!r.engine)
      BOOST_FAIL(r.error);
    return std::move(r.engine);
  }();
  return *e;
}


/// Largest |a - b| over two equally long vectors.
inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  float m = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

/// A fresh sequence id per call.
inline sequence_id next_seq() {
  static uint64_t n = 1000;
  return sequence_id{++n};
}

/// Runs `req` on the tiny engine to its end, `chunk` prompt tokens a step (0: all at once);
/// returns the last step's progress (the first token, the logits, prompt scores).
inline prefill_progress prefill_to_end(const prefill_request& req, int64_t chunk = 0) {
  auto& e = tiny_engine();
  if (chunk <= 0)
    chunk = static_cast<int64_t>(req.tokens.size());
  auto p = e.begin_prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  do {
    p = e.prefill_step(req.seq, chunk);
    BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  } while (!p.done);
  return p;
}

/// Prefills `tokens` from scratch in `mode` into a new sequence; returns its id and the logits
/// of the last prompt position.
inline std::pair<sequence_id, std::vector<float>> prefill_fresh(
    const std::vector<int32_t>& tokens, decoder_mode mode, int64_t chunk = 0) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = tokens;
  req.mode = mode;
  req.sampling.max_tokens = 1 << 20;
  return {req.seq, prefill_to_end(req, chunk).logits};
}

} // namespace deepinfer::engine::testing
