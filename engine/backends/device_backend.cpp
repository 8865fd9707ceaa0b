#include "engine/backends/device_backend.hpp"

#include <chrono>
#include <cstring>

namespace deepinfer::engine {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

device_backend::device_backend(const config& cfg, std::unique_ptr<device_api> device)
    : device_(std::move(device)), host_(cpu_backend::config{cfg.threads, cfg.isa}) {}

device_backend::~device_backend() {
  device_->make_current();
  for (auto& [k, w] : weights_)
    device_->release(w);
  for (auto* s : {&dx_, &dy_})
    if (s->data != nullptr)
      device_->release(s->data);
  for (auto* s : {&hx_, &hy_})
    if (s->data != nullptr)
      device_->release_pinned(s->data);
}

std::string device_backend::name() const {
  return device_->name() + " (host kernels " + host_.name() + ")";
}

void device_backend::matmul(const float* x, int64_t m, int64_t k, const float* w, int64_t n, float* y,
                            bool accumulate) {
  const product p{w, n, y, accumulate};
  matmul_shared_input(x, m, k, std::span{&p, 1});
}

void device_backend::matmul_shared_input(const float* x, int64_t m, int64_t k, std::span<const product> products) {
  if (m <= 0 || products.empty())
    return;
  const auto t0 = std::chrono::steady_clock::now();
  std::lock_guard lock{mtx_};
  device_->make_current();
  std::size_t out_floats = 0;
  for (const auto& p : products)
    out_floats += static_cast<std::size_t>(m * p.n);
  stage_in(x, static_cast<std::size_t>(m * k), out_floats);
  // 1. Outputs side by side in dy_ (and hy_): product i's after the ones before it.
  std::size_t at = 0;
  for (const auto& p : products) {
    const auto ys = static_cast<std::size_t>(m * p.n);
    if (p.accumulate)
      copy_in(p.y, hy_.data + at, dy_.data + at, ys);
    device_->gemm(dx_.data, m, k, device_weight(p.w, p.n, k), p.n, dy_.data + at, p.accumulate);
    at += ys;
  }
  // 2. One copy back, one wait.
  copy_out_and_wait(dy_.data, out_floats);
  at = 0;
  for (const auto& p : products) {
    const auto ys = static_cast<std::size_t>(m * p.n);
    std::memcpy(p.y, hy_.data + at, ys * sizeof(float));
    at += ys;
    count(m, k, p.n);
  }
  stats_.seconds += seconds_since(t0);
}

void device_backend::gated_mlp(const float* x, int64_t m, int64_t h, const float* w1, const float* w3, int64_t f,
                               const float* w2, float* out, bool accumulate, float* /*g*/, float* /*u*/) {
  const expert_mlp one{w1, w3, w2, m};
  mlp_trip(x, h, f, std::span{&one, 1}, out, accumulate);
}

void device_backend::gated_mlps(const float* x, int64_t h, int64_t f, std::span<const expert_mlp> experts, float* out,
                                float* /*g*/, float* /*u*/) {
  mlp_trip(x, h, f, experts, out, false);
}

void device_backend::mlp_trip(const float* x, int64_t h, int64_t f, std::span<const expert_mlp> experts, float* out,
                              bool accumulate) {
  int64_t rows = 0;
  for (const auto& e : experts)
    rows += e.rows;
  if (rows <= 0)
    return;
  const auto t0 = std::chrono::steady_clock::now();
  std::lock_guard lock{mtx_};
  device_->make_current();
  const auto gs = static_cast<std::size_t>(rows * f), os = static_cast<std::size_t>(rows * h);
  // dy_ holds [g | u | out] for every expert's rows, each expert's at its rows' offset; g and u
  // never leave the device.
  stage_in(x, os, 2 * gs + os);
  float* dg = dy_.data;
  float* du = dy_.data + gs;
  float* dout = dy_.data + 2 * gs;
  int64_t at = 0;
  for (const auto& e : experts) {
    if (e.rows == 0)
      continue;
    device_->gemm(dx_.data + at * h, e.rows, h, device_weight(e.w1, f, h), f, dg + at * f, false);
    device_->gemm(dx_.data + at * h, e.rows, h, device_weight(e.w3, f, h), f, du + at * f, false);
    at += e.rows;
  }
  // The gate is element-wise: one launch over every expert's rows.
  device_->silu_mul(dg, du, static_cast<int64_t>(gs));
  if (accumulate)
    copy_in(out, hy_.data, dout, os);
  at = 0;
  for (const auto& e : experts) {
    if (e.rows == 0)
      continue;
    device_->gemm(dg + at * f, e.rows, f, device_weight(e.w2, h, f), h, dout + at * h, accumulate);
    count(e.rows, h, f);
    count(e.rows, h, f);
    count(e.rows, f, h);
    at += e.rows;
  }
  copy_out_and_wait(dout, os);
  std::memcpy(out, hy_.data, os * sizeof(float));
  stats_.seconds += seconds_since(t0);
}

void device_backend::prepare_weight(const float* w, int64_t n, int64_t k) {
  std::lock_guard lock{mtx_};
  device_->make_current();
  device_weight(w, n, k);
}

void device_backend::release_weight(const float* w, int64_t n, int64_t k) {
  std::lock_guard lock{mtx_};
  auto it = weights_.find(weight_key{w, n, k});
  if (it == weights_.end())
    return;
  device_->make_current();
  device_->release(it->second);
  weight_bytes_ -= static_cast<std::size_t>(n * k) * sizeof(float);
  weights_.erase(it);
}

std::string device_backend::check_weight_room(std::size_t bytes) const {
  std::lock_guard lock{mtx_};
  device_->make_current();
  const std::size_t free = device_->free_bytes();
  if (bytes + staging_reserve <= free)
    return {};
  auto gib = [](std::size_t b) { return std::to_string(static_cast<double>(b) / double(1 << 30)).substr(0, 5); };
  return device_->name() + " has " + gib(free) + " GiB free of " + gib(device_->total_bytes()) +
         " GiB; the model's weights need " + gib(bytes) + " GiB on it (f32) plus " + gib(staging_reserve) +
         " GiB for staging: use a device with more memory, fewer ranks per device, or another backend";
}

std::size_t device_backend::prepared_weight_bytes() const {
  std::lock_guard lock{mtx_};
  return weight_bytes_;
}

backend::matmul_stats device_backend::stats() const {
  std::lock_guard lock{mtx_};
  return stats_;
}

uint64_t device_backend::trips() const {
  std::lock_guard lock{mtx_};
  return trips_;
}

void device_backend::reserve(staging& s, std::size_t floats, bool pinned) {
  if (floats <= s.floats)
    return;
  if (s.data != nullptr)
    pinned ? device_->release_pinned(s.data) : device_->release(s.data);
  s.data = pinned ? device_->allocate_pinned(floats) : device_->allocate(floats);
  s.floats = floats;
}

void device_backend::stage_in(const float* x, std::size_t in, std::size_t out) {
  reserve(dx_, in, false);
  reserve(hx_, in, true);
  reserve(dy_, out, false);
  reserve(hy_, out, true);
  copy_in(x, hx_.data, dx_.data, in);
}

void device_backend::copy_in(const float* host, float* pinned, float* device, std::size_t n) {
  std::memcpy(pinned, host, n * sizeof(float));
  device_->copy_to_device(device, pinned, n);
}

void device_backend::copy_out_and_wait(const float* device, std::size_t n) {
  device_->copy_to_host(hy_.data, device, n);
  device_->wait();
  ++trips_;
}

const float* device_backend::device_weight(const float* w, int64_t n, int64_t k) {
  if (auto it = weights_.find(weight_key{w, n, k}); it != weights_.end())
    return it->second;
  const auto count = static_cast<std::size_t>(n * k);
  float* staged = device_->allocate(count);
  float* wt = device_->allocate(count);
  device_->copy_to_device(staged, w, count);
  device_->transpose(staged, n, k, wt);
  device_->wait();
  device_->release(staged);
  weights_.emplace(weight_key{w, n, k}, wt);
  weight_bytes_ += count * sizeof(float);
  return wt;
}

void device_backend::count(int64_t m, int64_t k, int64_t n) {
  stats_.calls += 1;
  stats_.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

} // namespace deepinfer::engine
