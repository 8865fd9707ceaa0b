// Structured output in the engine: a sequence's constraint masks every sampled token (prefill's
// first and each decode step's), follows the output through an export/import (rebuilt from the
// tokens, as a rerouted request's is), keeps one token for the end, and a spec the factory refuses
// fails the request instead of being ignored.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <boost/test/unit_test.hpp>

#include "engine/testing/engine_fixture.hpp"
#include "engine/token_constraint.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::engine::testing;

namespace {

/// Spec "a,b,c": the output must be exactly those ids, then `eos`. Ends early (only eos) when the
/// tokens left cannot hold the rest, like a completion that no longer fits.
class scripted final : public token_constraint {
public:
  scripted(std::vector<int32_t> script, int32_t eos, std::size_t at) : script_(std::move(script)), eos_(eos), at_(at) {}
  std::span<const uint64_t> allowed(int64_t tokens_left) override {
    ++masks;
    const int32_t allowed = at_ < script_.size() && tokens_left > 0 ? script_[at_] : eos_;
    bits_.assign(static_cast<std::size_t>(allowed / 64 + 1), 0);
    bits_.back() = uint64_t{1} << (allowed % 64);
    last_left = tokens_left;
    return bits_;
  }
  bool advance(int32_t token) override {
    if (at_ < script_.size() && token == script_[at_]) {
      ++at_;
      return true;
    }
    return token == eos_;
  }
  static inline int masks = 0;
  static inline int64_t last_left = -1;

private:
  std::vector<int32_t> script_;
  int32_t eos_;
  std::size_t at_;
  std::vector<uint64_t> bits_;
};

class scripted_factory final : public token_constraint_factory {
public:
  explicit scripted_factory(int32_t eos) : eos_(eos) {}
  result make(std::string_view spec, std::span<const int32_t> output) override {
    std::vector<int32_t> script;
    for (std::size_t at = 0; at < spec.size();) {
      int32_t v = 0;
      auto [p, ec] = std::from_chars(spec.data() + at, spec.data() + spec.size(), v);
      if (ec != std::errc{})
        return {nullptr, "not a list of token ids: " + std::string{spec}};
      script.push_back(v);
      at = static_cast<std::size_t>(p - spec.data()) + 1;
    }
    // Positioned after the output so far: it must be a prefix of the script.
    if (output.size() > script.size() || !std::equal(output.begin(), output.end(), script.begin()))
      return {nullptr, "the output so far leaves the constraint"};
    return {std::make_unique<scripted>(std::move(script), eos_, output.size()), {}};
  }
  bool ready(std::string_view) const override { return true; }

private:
  int32_t eos_;
};

constexpr int32_t eos = 1;

rank_engine& constrained_engine() {
  static auto e = [] {
    rank_engine::config cfg{64, 1, fixture_isa()};
    cfg.constraints = std::make_shared<scripted_factory>(eos);
    auto r = rank_engine::load(tiny_model_dir(), cfg);
    BOOST_REQUIRE_MESSAGE(r.engine, r.error);
    return std::move(r.engine);
  }();
  return *e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_constraints)

BOOST_AUTO_TEST_CASE(every_sampled_token_follows_the_constraint_across_an_export_and_import) {
  auto& e = constrained_engine();
  const std::vector<int32_t> script{4242, 17, 99000, 5};
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(40, 5);
  req.sampling.max_tokens = 32;
  req.sampling.stop_ids = {eos};
  req.sampling.temperature = 0.8f; // sampled, not greedy: the mask decides, not the argmax
  req.sampling.seed = 3;
  req.sampling.constraint = "4242,17,99000,5";
  req.sampling.output_from = static_cast<int64_t>(req.tokens.size());
  auto p = e.prefill(req);
  BOOST_REQUIRE((p.status == engine_status::ok));
  BOOST_TEST(p.first.id == script[0]);
  std::vector<sequence_id> one{req.seq};
  BOOST_TEST(e.decode_step(one)[0].token.id == script[1]);
  // Moved elsewhere mid-output: the importing engine rebuilds the constraint from the tokens.
  auto bytes = e.export_sequence(req.seq);
  BOOST_REQUIRE(bytes.has_value());
  e.free(req.seq);
  sequence_id moved = next_seq();
  std::string err;
  BOOST_REQUIRE((e.import_sequence(moved, *bytes, req.sampling, &err) == engine_status::ok));
  one = {moved};
  BOOST_TEST(e.decode_step(one)[0].token.id == script[2]);
  BOOST_TEST(e.decode_step(one)[0].token.id == script[3]);
  auto end = e.decode_step(one)[0];
  BOOST_TEST(end.token.id == eos);
  BOOST_TEST(end.finished);
  e.free(moved);
}

BOOST_AUTO_TEST_CASE(one_token_is_kept_for_the_end_and_a_refused_spec_fails_the_request) {
  auto& e = constrained_engine();
  prefill_request req;
  req.seq = next_seq();
  req.tokens = random_tokens(20, 9);
  req.sampling.max_tokens = 3; // room for 2 script tokens and the end
  req.sampling.stop_ids = {eos};
  req.sampling.constraint = "300,301,302,303";
  req.sampling.output_from = static_cast<int64_t>(req.tokens.size());
  auto p = e.prefill(req);
  BOOST_REQUIRE((p.status == engine_status::ok));
  BOOST_TEST(p.first.id == 300);
  BOOST_TEST(scripted::last_left == 2);
  std::vector<sequence_id> one{req.seq};
  BOOST_TEST(e.decode_step(one)[0].token.id == 301);
  auto last = e.decode_step(one)[0];
  BOOST_TEST(scripted::last_left == 0);
  BOOST_TEST(last.token.id == eos); // the end, not a third script token cut off by max_tokens
  BOOST_TEST(last.finished);
  e.free(req.seq);
  // A spec the factory cannot build is refused, never ignored.
  req.seq = next_seq();
  req.sampling.constraint = "not ids";
  BOOST_TEST((e.prefill(req).status == engine_status::invalid_request));
  // An engine without a factory refuses every constrained request.
  req.seq = next_seq();
  req.sampling.constraint = "300";
  BOOST_TEST((tiny_engine().prefill(req).status == engine_status::invalid_request));
}

BOOST_AUTO_TEST_SUITE_END()
