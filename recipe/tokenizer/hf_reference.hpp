#pragma once

// Test and bench only (no .cpp): runs the HuggingFace reference tokenizer (npm
// @anush008/tokenizers in <cache>/hftok, driven by the scripts in testdata/) as a child process.

#include "recipe/prompt_segment.hpp"
#include "recipe/tokenizer/test_assets.hpp"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace deepinfer::recipe::test {

/// A scratch directory removed with the object.
class scratch_dir {
public:
  scratch_dir() : path_(std::filesystem::temp_directory_path() / ("deepinfer-tok-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++))) {
    std::filesystem::create_directories(path_);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

/// `node <script> args...` with NODE_PATH at the reference's node_modules; the exit status.
inline int run_node(const std::string& script, const std::vector<std::string>& args, const std::filesystem::path& stdout_file) {
  std::string cmd = "NODE_PATH='" + (cache_dir() / "hftok" / "node_modules").string() + "' node '" +
                    (source_dir() / "recipe" / "tokenizer" / "testdata" / script).string() + "'";
  for (const auto& a : args)
    cmd += " '" + a + "'";
  cmd += " > '" + stdout_file.string() + "'";
  return std::system(cmd.c_str());
}

/// HF's ids for each record, encoded with the tokenizer file `tokenizer_file` (no BOS).
inline std::vector<std::vector<token_id>> hf_encode(const std::filesystem::path& tokenizer_file,
                                                    const std::vector<std::string>& records) {
  scratch_dir dir;
  {
    std::ofstream in{dir.path() / "records.jsonl", std::ios::binary};
    for (const auto& r : records)
      in << nlohmann::json(r).dump() << '\n';
  }
  const auto out = dir.path() / "ids.txt";
  if (run_node("hf_encode.js", {tokenizer_file.string(), (dir.path() / "records.jsonl").string(), out.string()}, dir.path() / "log") != 0)
    throw std::runtime_error("node hf_encode.js failed (is node and " + (cache_dir() / "hftok").string() + " installed?)");
  std::ifstream in{out};
  std::vector<std::vector<token_id>> ids;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls{line};
    auto& v = ids.emplace_back();
    for (token_id t; ls >> t;)
      v.push_back(t);
  }
  return ids;
}

} // namespace deepinfer::recipe::test
