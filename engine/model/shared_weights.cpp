// model_weights::load_shared: one copy of a model per process.
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sys/stat.h>

#include <fmt/format.h>

#include "engine/model/weights.hpp"

namespace deepinfer::engine {

namespace {

/// What tells one set of model files from another: the text of config.json (which carries the
/// weights' fingerprint when a tool wrote it), then each file's device, inode, size and
/// modification time ("-" for a file that is not there: a model without a draft head), since a
/// file rewritten in place keeps its inode and, within a clock tick, its time. Two paths to the
/// same files (a symlink) share one load.
std::string files_identity(const std::string& dir) {
  std::ifstream config(dir + "/config.json", std::ios::binary);
  std::string id{std::istreambuf_iterator<char>(config), {}};
  for (const char* name : {"/config.json", "/model.safetensors", "/draft.safetensors"}) {
    struct stat st{};
    if (::stat((dir + name).c_str(), &st) != 0) {
      id += "|-";
      continue;
    }
    id += fmt::format("|{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  }
  return id;
}

struct loaded_models {
  std::mutex mtx;
  std::map<std::string, std::weak_ptr<const model_weights>> by_files;
};

loaded_models& process_models() {
  static loaded_models models;
  return models;
}

} // namespace

model_weights::shared_load_result model_weights::load_shared(const std::string& dir) {
  auto& models = process_models();
  // Loading under the lock: the ranks of an instance load together, and all but the first
  // would otherwise each read and widen the whole model before finding it loaded.
  std::lock_guard guard{models.mtx};
  const auto id = files_identity(dir);
  if (auto it = models.by_files.find(id); it != models.by_files.end())
    if (auto alive = it->second.lock())
      return {std::move(alive), {}};
  auto loaded = load(dir);
  if (!loaded.weights)
    return {nullptr, std::move(loaded.error)};
  std::shared_ptr<const model_weights> w = std::move(loaded.weights);
  std::erase_if(models.by_files, [](const auto& e) { return e.second.expired(); });
  models.by_files[id] = w;
  return {std::move(w), {}};
}

} // namespace deepinfer::engine
