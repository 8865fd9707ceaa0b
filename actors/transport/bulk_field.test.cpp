// Message fields sent as one block of bytes or as bit patterns (actors/bulk_field.hpp): the values
// come back with every bit through CAF's binary serializer (infinities, -0, NaN, which CAF 0.17's
// own float packing hangs on or changes), in fewer bytes than element by element, and a block
// that is not a whole number of values is an error, not a truncated vector.
#include "actors/messages.hpp"
#include "actors/testing/test_system_config.hpp"

#include <boost/test/unit_test.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace deepinfer::actors;

namespace {

/// Messages with actor handles (a prefill job's ranks, even unset) need a system to be written;
/// one per test case (a static one would outlive CAF's globals at exit).
struct with_system {
  testing::test_system_config cfg;
  caf::actor_system sys{cfg};
};

template <class T>
std::vector<char> written(caf::actor_system& sys, T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto e = sink(x);
  BOOST_REQUIRE_MESSAGE(!e, caf::to_string(e));
  return buf;
}

template <class T>
T read_back(caf::actor_system& sys, const std::vector<char>& buf) {
  T out;
  caf::binary_deserializer source{sys, buf};
  BOOST_REQUIRE(!source(out));
  return out;
}

/// The same vector written element by element, as CAF writes a plain std::vector<T> field.
template <class T>
std::vector<char> element_by_element(std::vector<T> x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  BOOST_REQUIRE(!sink(x));
  return buf;
}

} // namespace

BOOST_AUTO_TEST_SUITE(bulk_fields)

BOOST_AUTO_TEST_CASE(embeddings_and_prompt_tokens_cross_the_wire_unchanged) {
  with_system w;
  vision_result r;
  r.id = 7;
  r.encode_seconds = 0.25;
  for (int i = 0; i < 1000; ++i)
    r.embedding.push_back(std::sin(static_cast<float>(i)) * 1e3f);
  r.embedding.push_back(-0.0f);
  r.embedding.push_back(std::numeric_limits<float>::denorm_min());
  r.embedding.push_back(std::numeric_limits<float>::infinity());
  auto buf = written(w.sys, r);
  auto back = read_back<vision_result>(w.sys, buf);
  BOOST_TEST(back.id == r.id);
  BOOST_TEST(back.encode_seconds == r.encode_seconds);
  BOOST_REQUIRE_EQUAL(back.embedding.size(), r.embedding.size());
  BOOST_TEST(std::memcmp(back.embedding.data(), r.embedding.data(), r.embedding.size() * sizeof(float)) == 0);
  // One length and the bytes: no more than CAF's element-by-element layout of the same floats
  // (less the infinity: CAF 0.17's own float packing never returns on one).
  auto finite = r.embedding;
  finite.back() = 1.0f;
  BOOST_TEST(buf.size() <= element_by_element(finite).size() + 32);

  prompt_image im;
  im.width = 64;
  im.height = 32;
  im.rgb.assign(64 * 32 * 3, 9);
  im.embedding = {1.5f, -2.0f};
  auto im_back = read_back<prompt_image>(w.sys, written(w.sys, im));
  BOOST_TEST(im_back.rgb == im.rgb);
  BOOST_TEST(im_back.embedding == im.embedding);
  prompt_image empty;
  BOOST_TEST(read_back<prompt_image>(w.sys, written(w.sys, empty)).embedding.empty());

  // Log-probabilities: -inf and the NaN of a prompt's first entry keep their bits too.
  token_logprobs lp;
  lp.logprob = {-0.5f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  lp.top_n = 1;
  lp.top_ids = {4, 5, 6};
  lp.top_logprobs = {-0.1f, -0.0f, -3.0f};
  auto lp_back = read_back<token_logprobs>(w.sys, written(w.sys, lp));
  BOOST_REQUIRE_EQUAL(lp_back.logprob.size(), 3u);
  BOOST_TEST(std::memcmp(lp_back.logprob.data(), lp.logprob.data(), 3 * sizeof(float)) == 0);
  BOOST_TEST(std::signbit(lp_back.top_logprobs[1]));
  BOOST_TEST(lp_back.top_ids == lp.top_ids);

  prefill_job job;
  job.id = 3;
  for (int32_t i = 0; i < 5000; ++i)
    job.tokens.push_back(i * 37 % 129280);
  BOOST_TEST(read_back<prefill_job>(w.sys, written(w.sys, job)).tokens == job.tokens);
  // A printed message shows the field's size, not its bytes.
  BOOST_TEST(caf::deep_to_string(r).find("1003 values") != std::string::npos, caf::deep_to_string(r));
}

BOOST_AUTO_TEST_CASE(float_and_double_fields_keep_their_bits_infinities_included) {
  with_system w;
  const float inf = std::numeric_limits<float>::infinity();
  deepinfer::engine::sampling_params sp;
  sp.temperature = inf;
  sp.top_p = std::numeric_limits<float>::quiet_NaN();
  sp.presence_penalty = -0.0f;
  sp.repetition_penalty = std::numeric_limits<float>::denorm_min();
  auto sp_back = read_back<deepinfer::engine::sampling_params>(w.sys, written(w.sys, sp));
  BOOST_TEST(sp_back.temperature == inf);
  BOOST_TEST(std::isnan(sp_back.top_p));
  BOOST_TEST((sp_back.presence_penalty == 0.0f && std::signbit(sp_back.presence_penalty)));
  BOOST_TEST(sp_back.repetition_penalty == std::numeric_limits<float>::denorm_min());
  prefill_ask ask;
  ask.key = 9;
  ask.quota_s = -std::numeric_limits<double>::infinity();
  ask.missed_tokens = 5;
  auto ask_back = read_back<prefill_ask>(w.sys, written(w.sys, ask));
  BOOST_TEST(ask_back.quota_s == ask.quota_s);
  BOOST_TEST(ask_back.missed_tokens == 5);
  BOOST_TEST(caf::deep_to_string(ask).find("inf") != std::string::npos, caf::deep_to_string(ask));
}

BOOST_AUTO_TEST_CASE(a_block_of_bytes_that_is_no_whole_number_of_values_is_refused) {
  // Write the block as 7 bytes: the id (8 bytes), then the string's length and bytes.
  vision_result odd_source;
  odd_source.id = 1;
  std::vector<char> odd;
  caf::binary_serializer sink{nullptr, odd};
  std::string seven(7, 'x');
  BOOST_REQUIRE(!sink(odd_source.id, seven, odd_source.encode_seconds, odd_source.error));
  vision_result out;
  caf::binary_deserializer source{nullptr, odd};
  BOOST_TEST(static_cast<bool>(source(out)));
}

BOOST_AUTO_TEST_SUITE_END()
