// The determinism contract across ISAs at the model level: the same prompt gives the same logits
// and the same tokens (greedy and sampled) on every ISA this CPU runs, in exact and bounded mode,
// with contexts past the indexer's top-k (so the 8-bit indexer and the gathered attention run).
// What lets a mixed AVX2 / AVX-512 cluster reroute and hit caches without changing a token.
#include <cstring>
#include <memory>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

struct run_output {
  std::vector<std::vector<float>> logits; // prefill's last row, then each decode step's
  std::vector<int32_t> tokens;
};

run_output run_on(rank_engine& e, const std::vector<int32_t>& prompt, decoder_mode mode,
                  float temperature, int steps) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = prompt;
  req.mode = mode;
  req.sampling.max_tokens = 1 << 20;
  req.sampling.temperature = temperature;
  req.sampling.seed = 99;
  run_output out;
  auto p = e.prefill(req);
  BOOST_REQUIRE_MESSAGE(p.status == engine_status::ok, p.error);
  out.logits.push_back(p.logits);
  out.tokens.push_back(p.first.id);
  const std::vector<sequence_id> ids{req.seq};
  for (int s = 0; s < steps; ++s) {
    std::vector<float> lg;
    auto d = e.decode_step(ids, &lg);
    BOOST_REQUIRE(d[0].status == engine_status::ok);
    out.logits.push_back(lg);
    out.tokens.push_back(d[0].token.id);
  }
  e.free(req.seq);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(isa_equality)

BOOST_AUTO_TEST_CASE(every_isa_gives_the_same_logits_and_tokens) {
  const auto prompt = random_tokens(700, 77);
  std::vector<run_output> first;
  for (auto isa : kernels::supported_cpu_isas()) {
    auto loaded = rank_engine::load(tiny_model_dir(), rank_engine::config{32, 2, isa});
    BOOST_REQUIRE_MESSAGE(loaded.engine, loaded.error);
    std::vector<run_output> runs;
    runs.push_back(run_on(*loaded.engine, prompt, decoder_mode::exact, 0.0f, 3));
    runs.push_back(run_on(*loaded.engine, prompt, decoder_mode::bounded, 3.0f, 3));
    BOOST_TEST_MESSAGE(kernels::to_string(isa) << ": first tokens " << runs[0].tokens[0] << ", "
                                               << runs[1].tokens[0]);
    if (first.empty()) {
      first = std::move(runs);
      continue;
    }
    for (std::size_t r = 0; r < runs.size(); ++r) {
      BOOST_TEST((runs[r].tokens == first[r].tokens), kernels::to_string(isa) << " run " << r);
      for (std::size_t s = 0; s < runs[r].logits.size(); ++s) {
        const auto& a = runs[r].logits[s];
        const auto& b = first[r].logits[s];
        BOOST_TEST((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0),
                   kernels::to_string(isa) << " vs portable: run " << r << " step " << s);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
