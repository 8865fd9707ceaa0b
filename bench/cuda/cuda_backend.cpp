// bench_cuda_backend [--backend cuda|cpu|both] [--model DIR] [--prefill 8192,32768]
//   [--batches 1,8,64,256] [--decode-tokens 32] [--threads N] [--no-gemm] [--no-model]
// The CUDA backend's figures (issue 22), one run on one machine, printed as `key value` lines:
// 1. GEMM: the canonical-order kernel (the CPU's bits) vs cuBLAS SGEMM (FP32) and TF32 on the same
//    shapes, device time only (CUDA events), GFLOP/s and the fraction of cuBLAS SGEMM;
// 2. host <-> device copies: pinned and pageable GB/s (a block import's staging path);
// 3. the model: prefill tokens/s at each --prefill length and greedy decode tokens/s at each batch
//    size, per backend; with --backend both, the first tokens of every run must agree (the bench
//    fails otherwise). The model is `model_config::bench_v4()`, written once into --model DIR.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench_clock.hpp"
#include "bench_inputs.hpp"
#include "engine/backends/cuda/canonical_gemm.hpp"
#include "engine/model/random_model.hpp"
#include "engine/rank_engine.hpp"

using namespace deepinfer::engine;
using namespace deepinfer::bench;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "bench_cuda_backend: %s\n", what.c_str());
    std::exit(1);
  }
}

void cuda_ok(cudaError_t rc, const char* what) {
  require(rc == cudaSuccess, std::string{what} + ": " + cudaGetErrorString(rc));
}

// 1. GEMM ----------------------------------------------------------------------------------------

double time_ms(const std::function<void()>& fn, int reps) {
  cudaEvent_t a, b;
  cuda_ok(cudaEventCreate(&a), "event");
  cuda_ok(cudaEventCreate(&b), "event");
  fn(); // warm-up
  cuda_ok(cudaEventRecord(a), "record");
  for (int i = 0; i < reps; ++i)
    fn();
  cuda_ok(cudaEventRecord(b), "record");
  cuda_ok(cudaEventSynchronize(b), "sync");
  float ms = 0;
  cuda_ok(cudaEventElapsedTime(&ms, a, b), "elapsed");
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

void bench_gemm() {
  cublasHandle_t h;
  require(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
  struct shape {
    const char* what;
    int64_t m, k, n;
  };
  const shape shapes[] = {
    {"square", 4096, 4096, 4096},       {"prefill_qkv", 8192, 1024, 1536}, {"prefill_expert_up", 1024, 1024, 512},
    {"prefill_expert_down", 1024, 512, 1024}, {"lm_head_b64", 64, 1024, 129280}, {"decode_qkv_b1", 1, 1024, 1536},
    {"decode_qkv_b64", 64, 1024, 1536}, {"decode_qkv_b256", 256, 1024, 1536},
  };
  double best_sgemm = 0;
  for (const auto& s : shapes) {
    const auto xs = static_cast<std::size_t>(s.m * s.k), ws = static_cast<std::size_t>(s.n * s.k),
               ys = static_cast<std::size_t>(s.m * s.n);
    std::vector<float> hx = [&] { std::vector<float> v(xs); for (std::size_t i = 0; i < xs; ++i) v[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f; return v; }();
    std::vector<float> hw = [&] { std::vector<float> v(ws); for (std::size_t i = 0; i < ws; ++i) v[i] = static_cast<float>((i * 40503u) % 2001) / 1000.0f - 1.0f; return v; }();
    float *x, *w, *wt, *y, *yb;
    cuda_ok(cudaMalloc(&x, xs * 4), "malloc");
    cuda_ok(cudaMalloc(&w, ws * 4), "malloc");
    cuda_ok(cudaMalloc(&wt, ws * 4), "malloc");
    cuda_ok(cudaMalloc(&y, ys * 4), "malloc");
    cuda_ok(cudaMalloc(&yb, ys * 4), "malloc");
    cuda_ok(cudaMemcpy(x, hx.data(), xs * 4, cudaMemcpyHostToDevice), "copy");
    cuda_ok(cudaMemcpy(w, hw.data(), ws * 4, cudaMemcpyHostToDevice), "copy");
    cuda_ok(static_cast<cudaError_t>(cuda::transpose(w, s.n, s.k, wt, nullptr)), "transpose");
    const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    const int reps = flops > 1e11 ? 5 : flops > 1e9 ? 20 : 200;
    const double canon = time_ms([&] { cuda::canonical_gemm(x, s.m, s.k, wt, s.n, y, false, nullptr); }, reps);
    // Row-major y [m x n] = x [m x k] . w [n x k]^T is column-major y^T = w^T(op T) . x.
    const auto sgemm_into_yb = [&] {
      const float one = 1.0f, zero = 0.0f;
      cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.n), static_cast<int>(s.m), static_cast<int>(s.k),
                  &one, w, static_cast<int>(s.k), x, static_cast<int>(s.k), &zero, yb, static_cast<int>(s.n));
    };
    cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH);
    const double tf32 = time_ms(sgemm_into_yb, reps);
    // FP32 last, so yb holds its result for the sanity check: the canonical result against
    // cuBLAS's (another order: close, not equal).
    cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
    const double sgemm = time_ms(sgemm_into_yb, reps);
    std::vector<float> a(ys), b(ys);
    cuda_ok(cudaMemcpy(a.data(), y, ys * 4, cudaMemcpyDeviceToHost), "copy back");
    cuda_ok(cudaMemcpy(b.data(), yb, ys * 4, cudaMemcpyDeviceToHost), "copy back");
    double worst = 0;
    for (std::size_t i = 0; i < ys; ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])) / (1.0 + std::fabs(b[i])));
    require(worst < 1e-3, std::string{"canonical_gemm disagrees with cuBLAS on "} + s.what);
    const double g_c = flops / canon / 1e6, g_s = flops / sgemm / 1e6, g_t = flops / tf32 / 1e6;
    best_sgemm = std::max(best_sgemm, g_s);
    std::printf("gemm %-20s m=%-6lld k=%-5lld n=%-6lld canonical_gflops %9.1f sgemm_gflops %9.1f tf32_gflops %9.1f "
                "canonical_over_sgemm %.3f rel_diff_vs_sgemm %.1e\n",
                s.what, static_cast<long long>(s.m), static_cast<long long>(s.k), static_cast<long long>(s.n), g_c, g_s,
                g_t, g_c / g_s, worst);
    for (float* p : {x, w, wt, y, yb})
      cudaFree(p);
  }
  std::printf("gemm_sgemm_peak_gflops %.1f\n", best_sgemm);
  cublasDestroy(h);
}

// 2. copies ---------------------------------------------------------------------------------------

void bench_copies() {
  const std::size_t bytes = std::size_t{256} << 20;
  float* dev;
  float* pinned;
  cuda_ok(cudaMalloc(&dev, bytes), "malloc");
  cuda_ok(cudaMallocHost(&pinned, bytes), "malloc host");
  std::vector<float> pageable(bytes / 4, 1.0f);
  std::memset(pinned, 0, bytes);
  auto gbps = [&](const std::function<void()>& fn) { return static_cast<double>(bytes) / (time_ms(fn, 5) * 1e6); };
  std::printf("copy h2d_pinned_gbps %.1f\n", gbps([&] { cudaMemcpy(dev, pinned, bytes, cudaMemcpyHostToDevice); }));
  std::printf("copy d2h_pinned_gbps %.1f\n", gbps([&] { cudaMemcpy(pinned, dev, bytes, cudaMemcpyDeviceToHost); }));
  std::printf("copy h2d_pageable_gbps %.1f\n",
              gbps([&] { cudaMemcpy(dev, pageable.data(), bytes, cudaMemcpyHostToDevice); }));
  cudaFreeHost(pinned);
  cudaFree(dev);
}

// 3. the model ------------------------------------------------------------------------------------

struct model_figures {
  std::vector<int32_t> first_tokens; // every run's first token, in order: compared across backends
};

model_figures bench_model(const std::string& dir, backend_kind kind, int threads, const std::vector<int64_t>& prefills,
                          const std::vector<int64_t>& batches, int64_t decode_tokens) {
  model_figures f;
  const char* name = to_string(kind);
  int64_t longest = 0;
  for (auto p : prefills)
    longest = std::max(longest, p);
  int64_t biggest = 0;
  for (auto b : batches)
    biggest = std::max(biggest, b);
  rank_engine::config cfg;
  cfg.threads = threads;
  cfg.backend = kind;
  cfg.kv_blocks = std::max(longest / 128 + 8, biggest * ((128 + decode_tokens) / 128 + 2) + 8);
  const double t_load = clock_now();
  auto loaded = rank_engine::load(dir, cfg);
  require(loaded.engine != nullptr, loaded.error);
  auto& e = *loaded.engine;
  std::printf("model %s load_s %.2f backend_name \"%s\"\n", name, seconds_since(t_load), e.compute().name().c_str());
  uint64_t next = 1;
  {
    // Warm-up: first-use costs (host weight packing, allocations) are not the prefill's.
    prefill_request warm;
    warm.seq = sequence_id{next++};
    warm.tokens = random_prompt(256, 5, e.model().vocab_size);
    warm.sampling.max_tokens = 2;
    require(e.prefill(warm).status == engine_status::ok, "warm-up prefill failed");
    e.free(warm.seq);
  }
  for (auto len : prefills) {
    prefill_request req;
    req.seq = sequence_id{next++};
    req.tokens = random_prompt(len, 77 + static_cast<uint64_t>(len), e.model().vocab_size);
    req.sampling.max_tokens = 4;
    const double t0 = clock_now();
    auto p = e.prefill(req);
    const double s = seconds_since(t0);
    require(p.status == engine_status::ok, "prefill: " + p.error);
    f.first_tokens.push_back(p.first.id);
    std::printf("prefill %s tokens %lld seconds %.3f tokens_per_s %.0f\n", name, static_cast<long long>(len), s,
                static_cast<double>(len) / s);
    e.free(req.seq);
  }
  for (auto batch : batches) {
    std::vector<sequence_id> ids;
    for (int64_t i = 0; i < batch; ++i) {
      prefill_request req;
      req.seq = sequence_id{next++};
      req.tokens = random_prompt(128, 1000 + static_cast<uint64_t>(i), e.model().vocab_size);
      req.sampling.max_tokens = static_cast<int32_t>(decode_tokens + 1);
      auto p = e.prefill(req);
      require(p.status == engine_status::ok, "prefill: " + p.error);
      f.first_tokens.push_back(p.first.id);
      ids.push_back(req.seq);
    }
    int64_t emitted = 0;
    const double t0 = clock_now();
    for (int64_t s = 0; s < decode_tokens; ++s)
      for (auto& o : e.decode_step(ids))
        if (o.status == engine_status::ok) {
          ++emitted;
          if (s == decode_tokens - 1)
            f.first_tokens.push_back(o.token.id);
        }
    const double secs = seconds_since(t0);
    std::printf("decode %s batch %lld tokens %lld seconds %.3f tokens_per_s %.0f\n", name,
                static_cast<long long>(batch), static_cast<long long>(emitted), secs,
                static_cast<double>(emitted) / secs);
    for (auto id : ids)
      e.free(id);
  }
  return f;
}

} // namespace

int main(int argc, char** argv) {
  std::string backend = "cuda", model_dir = "/tmp/deepinfer-bench-v4", prefill_list = "8192,32768",
              batch_list = "1,8,64,256";
  int64_t decode_tokens = 32;
  int threads = 2;
  bool no_gemm = false, no_model = false;
  CLI::App app{"bench_cuda_backend: the CUDA backend's GEMM, copy and model figures (issue 22)", "bench_cuda_backend"};
  app.add_option("--backend", backend, "cuda, cpu or both (the model part)")
    ->check(CLI::IsMember({"cuda", "cpu", "both"}))
    ->capture_default_str();
  app.add_option("--model", model_dir, "model directory (bench_v4 is written there when absent)")->capture_default_str();
  app.add_option("--prefill", prefill_list, "prompt lengths to prefill")->capture_default_str();
  app.add_option("--batches", batch_list, "decode batch sizes")->capture_default_str();
  app.add_option("--decode-tokens", decode_tokens, "decode steps per batch")->capture_default_str();
  app.add_option("--threads", threads, "host threads per engine")->capture_default_str();
  app.add_flag("--no-gemm", no_gemm, "skip the GEMM and copy figures");
  app.add_flag("--no-model", no_model, "skip the model figures");
  CLI11_PARSE(app, argc, argv);

  const bool want_cuda = backend != "cpu";
  if (want_cuda) {
    int count = 0;
    const auto rc = cudaGetDeviceCount(&count);
    require(rc == cudaSuccess && count > 0,
            std::string{"no usable CUDA device ("} + cudaGetErrorString(rc) + "); run with --backend cpu --no-gemm");
    cudaDeviceProp prop{};
    cuda_ok(cudaGetDeviceProperties(&prop, 0), "properties");
    std::printf("device \"%s\" cc %d.%d sms %d memory_gib %.1f\n", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    if (!no_gemm) {
      bench_gemm();
      bench_copies();
    }
  }
  if (no_model)
    return 0;
  if (!load_config_file(model_dir + "/config.json").config) {
    const double t0 = clock_now();
    auto err = random_model::write(model_config::bench_v4(), 7, model_dir);
    require(err.empty(), "writing bench_v4: " + err);
    std::printf("model bench_v4 written_s %.1f dir %s\n", seconds_since(t0), model_dir.c_str());
  }
  const auto prefills = parse_list(prefill_list), batches = parse_list(batch_list);
  std::vector<model_figures> runs;
  if (backend == "cuda" || backend == "both")
    runs.push_back(bench_model(model_dir, backend_kind::cuda, threads, prefills, batches, decode_tokens));
  if (backend == "cpu" || backend == "both")
    runs.push_back(bench_model(model_dir, backend_kind::cpu, threads, prefills, batches, decode_tokens));
  if (runs.size() == 2) {
    require(runs[0].first_tokens == runs[1].first_tokens, "the CUDA and CPU backends chose different tokens");
    std::printf("equal_tokens_cuda_cpu %zu\n", runs[0].first_tokens.size());
  }
  return 0;
}
