// bench_tokenizer_throughput [REPS] [hf|agent|all] : single-thread encode throughput of recipe::tokenizer next to
// HuggingFace tokenizers (node @anush008/tokenizers) on the same ~1 MB text, interleaved round
// by round in one run; then a 77K-token agent-style prompt encoded as segments on 2 threads vs 1.
// Needs the assets of scripts/prepare_tokenizer.sh (the repository is the one it was built from,
// or DEEPINFER_SOURCE_DIR).

#include "recipe/tokenizer/agent_prompt.hpp"
#include "recipe/tokenizer/hf_reference.hpp"
#include "recipe/tokenizer/test_corpus.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace deepinfer::recipe;
using clock_type = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// The text of tokenizer-reference.md §5: English vim docs, zh_CN catalog strings, Python stdlib.
std::string bench_text() {
  namespace cd = test::corpus_detail;
  return cd::gather(cd::files("/usr/share/vim/vim90/doc", {".txt"}, false), 350000, 1 << 20) + "\n" +
         cd::gather(cd::files("/usr/share/locale/zh_CN/LC_MESSAGES", {".mo"}, false), 350000, 1 << 20, true) + "\n" +
         cd::gather(cd::files("/usr/lib/python3.11", {".py"}, false), 350000, 1 << 20);
}

std::string load_average() {
  std::ifstream in{"/proc/loadavg"};
  std::string one;
  in >> one;
  return one;
}

} // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string what = argc > 2 ? argv[2] : "all"; // hf | agent | all
  const auto file = test::asset("tokenizer_v32.json");
  const std::string text = bench_text();
  test::scratch_dir dir;
  const auto text_path = dir.path() / "bench.txt";
  std::ofstream(text_path, std::ios::binary) << text;

  // 1. single thread, whole-string encode, interleaved with HF: each round starts a fresh HF
  //    process and a fresh tokenizer, then times a cold and a warm (piece cache filled) encode.
  tokenizer::config one;
  one.threads = 1;
  std::vector<double> hf_cold, hf_warm, our_cold, our_warm;
  if (what != "agent") {
  std::size_t hf_tokens = 0, our_tokens = 0;
  for (int r = 0; r < reps; ++r) {
    const auto out = dir.path() / "hf.txt";
    if (test::run_node("hf_bench.js", {file.string(), text_path.string(), "2"}, out) != 0) {
      std::cerr << "node hf_bench.js failed\n";
      return 1;
    }
    std::ifstream in{out};
    std::string tag;
    double ms = 0;
    for (int k = 0; in >> tag >> hf_tokens >> ms; ++k)
      (k == 0 ? hf_cold : hf_warm).push_back(ms);
    auto tok = tokenizer::load(file, one);
    if (!tok) {
      std::cerr << tok.error << "\n";
      return 1;
    }
    for (int k = 0; k < 2; ++k) {
      const auto t0 = clock_type::now();
      our_tokens = tok.value->encode(text).size();
      (k == 0 ? our_cold : our_warm).push_back(ms_since(t0));
    }
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  auto row = [&](const char* who, const char* mode, double ms, std::size_t tokens) {
    std::printf("| %s | %s | %.1f ms | %.2f MB/s | %.0f K tok/s |\n", who, mode, ms, mb / ms * 1000,
                static_cast<double>(tokens) / ms);
  };
  std::printf("text: %zu bytes; tokens: ours %zu, HF %zu (%s)\n", text.size(), our_tokens, hf_tokens,
              our_tokens == hf_tokens ? "same count" : "COUNT DIFFERS");
  std::printf("| encoder | mode | median of %d | MB/s | tokens/s |\n| --- | --- | --- | --- | --- |\n", reps);
  row("HF tokenizers 0.22.2 (node)", "cold", median(hf_cold), hf_tokens);
  row("HF tokenizers 0.22.2 (node)", "warm", median(hf_warm), hf_tokens);
  row("recipe::tokenizer, 1 thread", "cold", median(our_cold), our_tokens);
  row("recipe::tokenizer, 1 thread", "warm", median(our_warm), our_tokens);
  std::printf("speedup vs HF: cold %.2fx, warm %.2fx\n\n", median(hf_cold) / median(our_cold), median(hf_warm) / median(our_warm));
  }
  if (what == "hf")
    return 0;

  // 2. agent prompt: segments on 1 thread, on 2 threads (forced), on 2 threads (adaptive: the
  //    default, which falls back to one thread when the second one does not pay), interleaved
  tokenizer::config two = one, adaptive = one;
  two.threads = adaptive.threads = 2;
  two.adaptive = false;
  auto t1 = tokenizer::load(file, one), t2 = tokenizer::load(file, two), ta = tokenizer::load(file, adaptive);
  if (!t1 || !t2 || !ta)
    return 1;
  const prompt_segments prompt = test::agent_prompt(*t1.value, 77'000);
  const auto want = t1.value->encode(prompt);
  const std::shared_ptr<const tokenizer> toks[3] = {t1.value, t2.value, ta.value};
  std::vector<double> times[3];
  for (int r = -10; r < reps * 40; ++r) // 10 warm-up rounds fill the piece caches of every thread
    for (int k = 0; k < 3; ++k) {
      const auto t0 = clock_type::now();
      const auto ids = toks[k]->encode(prompt);
      if (r >= 0)
        times[k].push_back(ms_since(t0));
      if (ids != want) {
        std::cerr << "parallel ids differ\n";
        return 1;
      }
    }
  std::size_t bytes = 0;
  for (const auto& s : prompt)
    bytes += s.text.size();
  std::printf("agent prompt: %zu segments, %zu bytes, %zu tokens\n", prompt.size(), bytes, want.size());
  const char* names[3] = {"1", "2 (parallel)", "2 (adaptive, default)"};
  double mins[3], meds[3];
  std::printf("| threads | min of %d | median |\n| --- | --- | --- |\n", reps * 40);
  for (int k = 0; k < 3; ++k) {
    mins[k] = *std::min_element(times[k].begin(), times[k].end());
    meds[k] = median(times[k]);
    std::printf("| %s | %.2f ms | %.2f ms |\n", names[k], mins[k], meds[k]);
  }
  std::printf("parallel speedup: %.2fx (min), %.2fx (median); adaptive %.2fx (median); load average %s\n", mins[0] / mins[1],
              meds[0] / meds[1], meds[0] / meds[2], load_average().c_str());
  return 0;
}
