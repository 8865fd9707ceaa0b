#include "engine/model/weights.hpp"

#include <filesystem>
#include <cstring>
#include <fstream>
#include <memory>

#include <boost/test/unit_test.hpp>

#include "engine/model/safetensors.hpp"
#include "engine/testing/test_models.hpp"

using namespace deepinfer::engine;
namespace fs = std::filesystem;

namespace {

enum class damage { none, drop_tensor, wrong_shape, unknown_dtype };

// Writes a model directory whose tensor `victim` is damaged as asked (zeros everywhere).
std::string write_damaged(const std::string& name, damage d, const std::string& victim) {
  auto dir = testing::scratch_dir(name);
  auto c = testing::micro_config();
  c.dtype = weight_dtype::f32; // the tensors below are written as F32
  std::ofstream(dir + "/config.json") << to_json(c);
  safetensors_writer w;
  std::size_t bytes = 0;
  for (auto s : tensor_specs(c)) {
    if (s.name == victim && d == damage::drop_tensor)
      continue;
    if (s.name == victim && d == damage::wrong_shape)
      s.shape.back() += 1;
    std::size_t n = 4;
    for (auto x : s.shape)
      n *= static_cast<std::size_t>(x);
    bytes += n;
    // An unknown dtype is patched into the header text below: the writer knows only real ones.
    w.add(s.name, "F32", s.shape);
  }
  BOOST_REQUIRE(w.begin(dir + "/model.safetensors"));
  std::vector<char> zeros(bytes, 0);
  w.write(zeros.data(), zeros.size());
  BOOST_REQUIRE(w.finish());
  if (d == damage::unknown_dtype) {
    std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), {});
    auto at = all.find("\"" + victim + "\":{\"dtype\":\"F32\"");
    BOOST_REQUIRE(at != std::string::npos);
    all.replace(at + victim.size() + 13, 3, "Q7X"); // same length keeps every offset valid
    f.seekp(0);
    f.write(all.data(), static_cast<std::streamsize>(all.size()));
  }
  return dir;
}

// Whether this process maps `path` (/proc/self/maps names each mapped file).
bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0)
      return true;
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(weights)

BOOST_AUTO_TEST_CASE(tiny_model_loads_with_a_matching_fingerprint) {
  auto r = model_weights::load(testing::tiny_model_dir());
  BOOST_REQUIRE_MESSAGE(r.weights, r.error);
  const auto& c = r.weights->config();
  BOOST_TEST(c.vocab_size == 129280);
  BOOST_TEST(c.fingerprint.size() == 16u);
  BOOST_TEST(r.weights->encoder.size() == 4u);
  BOOST_TEST(r.weights->decoder.size() == 4u);
  BOOST_TEST(r.weights->lm_head == r.weights->embed);
}

// A bf16 model is widened at load, and its file is not kept mapped (its pages would count in the
// process's resident memory once more); an f32 model is used from its mapping.
BOOST_AUTO_TEST_CASE(bf16_model_loads_as_the_rounded_f32_weights) {
  auto c = testing::micro_config();
  auto f32_dir = testing::scratch_dir("micro_f32");
  auto bf16_dir = testing::scratch_dir("micro_bf16");
  c.dtype = weight_dtype::f32;
  BOOST_REQUIRE(random_model::write(c, 3, f32_dir).empty());
  c.dtype = weight_dtype::bf16;
  BOOST_REQUIRE(random_model::write(c, 3, bf16_dir).empty());
  auto a = model_weights::load(f32_dir);
  auto b = model_weights::load(bf16_dir);
  BOOST_REQUIRE_MESSAGE(a.weights, a.error);
  BOOST_REQUIRE_MESSAGE(b.weights, b.error);
  BOOST_TEST(a.weights->config().fingerprint != b.weights->config().fingerprint);
  BOOST_TEST(mapped(fs::canonical(f32_dir).string() + "/model.safetensors"));
  BOOST_TEST(!mapped(fs::canonical(bf16_dir).string() + "/model.safetensors"));
  for (int i = 0; i < 1000; ++i) {
    float x = a.weights->embed[i], y = b.weights->embed[i];
    BOOST_TEST(std::fabs(x - y) <= std::fabs(x) / 128.0f + 1e-30f);
  }
}

// The ranks of one process load a model once: the same files give the same object while some
// holder keeps it; a model made again in the same directory is loaded afresh.
BOOST_AUTO_TEST_CASE(load_shared_gives_one_copy_per_process_while_held) {
  auto c = testing::micro_config();
  auto dir = testing::scratch_dir("shared");
  BOOST_REQUIRE(random_model::write(c, 3, dir).empty());
  auto a = model_weights::load_shared(dir);
  auto b = model_weights::load_shared(dir);
  BOOST_REQUIRE_MESSAGE(a.weights, a.error);
  BOOST_TEST(a.weights.get() == b.weights.get());
  BOOST_TEST(model_weights::load_shared(dir + "/.").weights.get() == a.weights.get()); // another path, same files
  std::weak_ptr<const model_weights> held = a.weights;
  a.weights.reset();
  BOOST_TEST(!held.expired());
  b.weights.reset();
  BOOST_TEST(held.expired()); // nobody holds it: the memory goes

  auto first = model_weights::load_shared(dir);
  BOOST_REQUIRE_MESSAGE(first.weights, first.error);
  BOOST_REQUIRE(random_model::write(c, 4, dir).empty()); // made again, in place
  auto again = model_weights::load_shared(dir);
  auto fresh = model_weights::load(dir);
  BOOST_REQUIRE_MESSAGE(again.weights, again.error);
  BOOST_TEST(again.weights.get() != first.weights.get());
  BOOST_TEST(again.weights->config().fingerprint != first.weights->config().fingerprint);
  BOOST_TEST(again.weights->config().fingerprint == fresh.weights->config().fingerprint);
  BOOST_TEST(std::memcmp(again.weights->embed, fresh.weights->embed,
                         static_cast<std::size_t>(c.vocab_size * c.hidden) * sizeof(float)) == 0);
  BOOST_TEST(!model_weights::load_shared(dir + "/missing").error.empty());
}

BOOST_AUTO_TEST_CASE(untied_model_has_its_own_lm_head) {
  auto c = testing::micro_config();
  c.tied_embeddings = false;
  auto dir = testing::scratch_dir("untied");
  BOOST_REQUIRE(random_model::write(c, 4, dir).empty());
  auto r = model_weights::load(dir);
  BOOST_REQUIRE_MESSAGE(r.weights, r.error);
  BOOST_TEST(r.weights->lm_head != r.weights->embed);
  BOOST_TEST(r.weights->lm_head[0] != r.weights->embed[0]);
}

BOOST_AUTO_TEST_CASE(config_json_round_trips_and_rejects_bad_shapes) {
  auto c = model_config::small();
  c.fingerprint = "0123456789abcdef";
  auto back = config_from_json(to_json(c));
  BOOST_REQUIRE_MESSAGE(back.config, back.error);
  BOOST_TEST(to_json(*back.config) == to_json(c));
  BOOST_TEST(back.config->kv_layout() == c.kv_layout());
  auto bad = config_from_json(R"({"heads": 5, "kv_heads": 2})");
  BOOST_TEST(!bad.config);
  BOOST_TEST(bad.error.find("multiple of kv_heads") != std::string::npos, bad.error);
  BOOST_TEST(!config_from_json(R"({"dtype": "f8"})").config);
  BOOST_TEST(!config_from_json("{not json").config);
  // A misspelled key is named, never taken as the default it meant to change.
  auto typo = config_from_json(R"({"hiden": 64})");
  BOOST_TEST(!typo.config);
  BOOST_TEST(typo.error.find("unknown key 'hiden'") != std::string::npos, typo.error);
  auto vtypo = config_from_json(R"({"vision": {"layers": 1, "pach": 8}})");
  BOOST_TEST(!vtypo.config);
  BOOST_TEST(vtypo.error.find("unknown key 'vision.pach'") != std::string::npos, vtypo.error);
  BOOST_TEST(config_from_json("[1]").error.find("expected one JSON object") != std::string::npos);
  BOOST_TEST(config_from_json(R"({"vision": 3})").error.find("'vision' must be an object") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_named_preset_is_valid_and_round_trips) {
  for (const char* name : {"tiny", "small", "bench_v4"}) {
    auto c = model_config::preset(name);
    BOOST_REQUIRE_MESSAGE(c, name);
    BOOST_TEST(c->name == name);
    BOOST_TEST(c->validate().empty(), name << ": " << c->validate());
    auto back = config_from_json(to_json(*c));
    BOOST_REQUIRE_MESSAGE(back.config, back.error);
    BOOST_TEST(to_json(*back.config) == to_json(*c));
  }
  BOOST_TEST(!model_config::preset("v4"));
}

BOOST_AUTO_TEST_CASE(missing_tensor_is_named) {
  auto r = model_weights::load(write_damaged("missing", damage::drop_tensor, "dec.2.index.wq"));
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("missing tensor 'dec.2.index.wq'") != std::string::npos, r.error);
}

BOOST_AUTO_TEST_CASE(wrong_shape_is_named_with_both_shapes) {
  auto r = model_weights::load(write_damaged("shape", damage::wrong_shape, "enc.1.moe.w2"));
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("tensor 'enc.1.moe.w2' has shape [16, 128, 129], expected [16, 128, 128]") !=
                 std::string::npos,
             r.error);
}

BOOST_AUTO_TEST_CASE(unknown_dtype_is_named) {
  auto r = model_weights::load(write_damaged("dtype", damage::unknown_dtype, "global.wk"));
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("tensor 'global.wk' has unknown dtype 'Q7X'") != std::string::npos, r.error);
}

BOOST_AUTO_TEST_CASE(truncated_file_names_the_first_tensor_past_the_end) {
  auto dir = testing::scratch_dir("truncated");
  BOOST_REQUIRE(random_model::write(testing::micro_config(), 5, dir).empty());
  auto path = dir + "/model.safetensors";
  fs::resize_file(path, fs::file_size(path) - 100);
  auto r = model_weights::load(dir);
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("truncated file") != std::string::npos, r.error);
  // The file's last tensor (the vision encoder's output norm when the model has one).
  const auto last = tensor_specs(testing::micro_config()).back().name;
  BOOST_TEST(r.error.find("tensor '" + last + "'") != std::string::npos, r.error);
}

BOOST_AUTO_TEST_CASE(modified_weights_fail_the_fingerprint_check) {
  auto dir = testing::scratch_dir("tampered");
  BOOST_REQUIRE(random_model::write(testing::micro_config(), 5, dir).empty());
  {
    std::fstream f(dir + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  }
  auto r = model_weights::load(dir);
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("fingerprint") != std::string::npos, r.error);
}

BOOST_AUTO_TEST_CASE(missing_directory_fails_cleanly) {
  auto r = model_weights::load("/nonexistent/model");
  BOOST_TEST(!r.weights);
  BOOST_TEST(r.error.find("cannot open") != std::string::npos, r.error);
}

BOOST_AUTO_TEST_SUITE_END()
