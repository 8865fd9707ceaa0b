// The seeded preset models the launcher makes in the cache on first run.
#include <chrono>
#include <filesystem>
#include <string>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "engine/model/model_config.hpp"
#include "engine/model/random_model.hpp"
#include "engine/model/weights.hpp"
#include "launcher/model_cache.hpp"

using namespace deepinfer;

BOOST_AUTO_TEST_SUITE(model_cache)

// `model = "small"` (or --model small) gets the small preset's seeded model, written once: a
// second start reuses it. An unknown name is an error that lists the presets.
BOOST_AUTO_TEST_CASE(a_preset_is_made_once_in_the_cache_and_reused) {
  namespace fs = std::filesystem;
  const auto cache = fs::temp_directory_path() / ("deepinfer-model-cache-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  auto made = launcher::ensure_preset_model(cache.string(), "small");
  BOOST_REQUIRE_MESSAGE(made.error.empty(), made.error);
  BOOST_TEST(made.dir == (cache / "models" / "small").string());
  auto cfg = engine::load_config_file(made.dir + "/config.json");
  BOOST_REQUIRE_MESSAGE(cfg.config, cfg.error);
  BOOST_TEST(cfg.config->name == "small");
  BOOST_TEST(cfg.config->hidden == engine::model_config::small().hidden);
  const auto written = fs::last_write_time(made.dir + "/model.safetensors");
  auto again = launcher::ensure_preset_model(cache.string(), "small");
  BOOST_TEST(again.error.empty());
  BOOST_TEST(again.dir == made.dir);
  BOOST_TEST((fs::last_write_time(made.dir + "/model.safetensors") == written)); // reused, not written again
  auto unknown = launcher::ensure_preset_model(cache.string(), "huge");
  BOOST_TEST(unknown.error.find("no model preset named 'huge' (tiny, small, bench_v4)") != std::string::npos, unknown.error);
  fs::remove_all(cache);
}

// The tiny preset became bf16: a cache holding the f32 tiny of an older build is made again in
// the preset's dtype instead of being served as it is.
BOOST_AUTO_TEST_CASE(a_cached_preset_of_another_dtype_is_made_again) {
  namespace fs = std::filesystem;
  const auto cache = fs::temp_directory_path() / ("deepinfer-model-cache-dtype-" + std::to_string(::getpid()));
  fs::remove_all(cache);
  auto older = engine::model_config::tiny();
  BOOST_REQUIRE(older.dtype == engine::weight_dtype::bf16);
  older.dtype = engine::weight_dtype::f32;
  const auto dir = cache / "models" / "tiny-vision";
  fs::create_directories(dir.parent_path());
  BOOST_REQUIRE(engine::random_model::write(older, 7, dir.string()).empty());
  auto made = launcher::ensure_preset_model(cache.string(), "tiny");
  BOOST_REQUIRE_MESSAGE(made.error.empty(), made.error);
  BOOST_TEST(made.dir == dir.string());
  auto cfg = engine::load_config_file(made.dir + "/config.json");
  BOOST_REQUIRE_MESSAGE(cfg.config, cfg.error);
  BOOST_TEST((cfg.config->dtype == engine::weight_dtype::bf16));
  fs::remove_all(cache);
}

BOOST_AUTO_TEST_SUITE_END()
