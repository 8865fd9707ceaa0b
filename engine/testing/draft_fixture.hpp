#pragma once

// What the speculative-decoding suites share (engine/speculative.test.cpp, engine/decode_loop.test.cpp):
// the micro model with a seeded random draft head, engines of each mode, and plain decode's output.

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "engine/rank_engine.hpp"
#include "engine/testing/engine_fixture.hpp"

namespace deepinfer::engine::testing {

/// The micro model (512 ids: cheap logits) with a seeded random draft head.
inline const std::string& draft_model_dir() {
  static const std::string dir = [] {
    auto c = micro_config();
    c.draft_positions = 5;
    c.draft_vocab = 256;
    c.draft_rank = 8;
    auto d = scratch_dir("micro_draft");
    if (!random_model::write(c, 11, d).empty())
      std::abort();
    return d;
  }();
  return dir;
}

inline std::unique_ptr<rank_engine> load_draft_engine(speculative_mode m) {
  rank_engine::config cfg{1024, 2, fixture_isa()};
  cfg.speculative = m;
  auto r = rank_engine::load(draft_model_dir(), cfg);
  BOOST_REQUIRE_MESSAGE(r.engine, r.error);
  return std::move(r.engine);
}

/// One request of a run: its prompt and sampling, plain decode's output and what the run got.
struct decode_job {
  std::vector<int32_t> prompt;
  sampling_params sampling;
  std::vector<int32_t> want;
  std::vector<int32_t> got;
  bool cancelled = false;
};

/// Prefills `j` into a new sequence, its first token in `j.got`: the sequence, or nullopt when
/// that token ended it (then freed).
inline std::optional<sequence_id> start_job(rank_engine& e, decode_job& j) {
  prefill_request req;
  req.seq = next_seq();
  req.tokens = j.prompt;
  req.sampling = j.sampling;
  auto p = e.prefill(req);
  BOOST_REQUIRE(p.status == engine_status::ok);
  j.got = {p.first.id};
  if (j.got.size() >= static_cast<std::size_t>(j.sampling.max_tokens) ||
      std::count(j.sampling.stop_ids.begin(), j.sampling.stop_ids.end(), p.first.id) > 0) {
    e.free(req.seq);
    return std::nullopt;
  }
  return req.seq;
}

/// Plain decode, one request at a time: the reference.
inline std::vector<int32_t> plain_output(rank_engine& e, const decode_job& j) {
  decode_job run = j;
  const auto seq = start_job(e, run);
  std::vector<int32_t> out = run.got;
  if (!seq)
    return out;
  std::vector<sequence_id> one{*seq};
  bool done = false;
  while (!done) {
    auto o = e.decode_step(one)[0];
    BOOST_REQUIRE(o.status == engine_status::ok);
    out.push_back(o.token.id);
    done = o.finished;
  }
  e.free(*seq);
  return out;
}

} // namespace deepinfer::engine::testing
