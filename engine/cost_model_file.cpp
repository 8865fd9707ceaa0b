#include "engine/cost_model_file.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace deepinfer::engine {

cost_model_file cost_model_file::load(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str()).value_or(cost_model_file{});
}

std::optional<cost_model_file> cost_model_file::from_json(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    cost_model_file out;
    if (!j.contains("fits"))
      return out; // the older single-fit layout: no engine setup to match it to
    for (const auto& f : j.at("fits")) {
      entry e;
      auto isa = kernels::parse_cpu_isa(f.at("isa").get<std::string>());
      auto model = deepinfer::balancers::cost_model::from_json(f.dump());
      if (!isa || !model)
        return std::nullopt;
      e.isa = *isa;
      e.threads = f.at("threads").get<int>();
      auto backend = parse_backend_kind(f.value("backend", std::string{"cpu"}));
      if (!backend)
        return std::nullopt;
      e.backend = *backend;
      e.model = *model;
      e.samples = f.value("samples", 0);
      e.mean_rel_err = f.value("mean_rel_err", 0.0);
      if (f.contains("verify_steps"))
        for (const auto& p : f.at("verify_steps")) {
          const verify_cost_point v{p.at(0).get<int64_t>(), p.at(1).get<int64_t>(), p.at(2).get<double>() * 1e-9,
                                    p.size() < 4 || p.at(3).get<int>() != 0};
          if (v.seqs < 1 || v.rows < v.seqs || !(v.seconds > 0.0))
            return std::nullopt; // not a measured step: measure again
          e.verify_steps.push_back(v);
        }
      out.put(e);
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<cost_model_file::entry> cost_model_file::find(kernels::cpu_isa isa, int threads,
                                                            backend_kind backend) const {
  for (const auto& e : entries_)
    if (e.isa == isa && e.threads == threads && e.backend == backend)
      return e;
  return std::nullopt;
}

void cost_model_file::put(const entry& e) {
  for (auto& x : entries_)
    if (x.isa == e.isa && x.threads == e.threads && x.backend == e.backend) {
      x = e;
      return;
    }
  entries_.push_back(e);
}

std::string cost_model_file::to_json() const {
  nlohmann::ordered_json j;
  j["formula"] = "ns = a0 + a1 q + a2 q c + a3 q^2 (+ f0 + f1 (c + q) for the last chunk); q new "
                 "tokens after c computed";
  j["unit"] = "ns";
  j["fits"] = nlohmann::ordered_json::array();
  for (const auto& e : entries_) {
    nlohmann::ordered_json f;
    f["isa"] = kernels::to_string(e.isa);
    f["threads"] = e.threads;
    f["backend"] = to_string(e.backend);
    f["samples"] = e.samples;
    f["mean_rel_err"] = e.mean_rel_err;
    const auto& k = e.model.coefficients();
    f["a0"] = k.a0 * 1e9;
    f["a1"] = k.a1 * 1e9;
    f["a2"] = k.a2 * 1e9;
    f["a3"] = k.a3 * 1e9;
    f["f0"] = k.f0 * 1e9;
    f["f1"] = k.f1 * 1e9;
    if (!e.verify_steps.empty()) {
      f["verify_steps"] = nlohmann::ordered_json::array();
      for (const auto& v : e.verify_steps)
        f["verify_steps"].push_back({v.seqs, v.rows, std::round(v.seconds * 1e9), v.proposing ? 1 : 0});
    }
    j["fits"].push_back(std::move(f));
  }
  return j.dump(2) + "\n";
}

std::string cost_model_file::save(const std::string& path) const {
  namespace fs = std::filesystem;
  const auto tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out)
      return "cannot write " + tmp;
    out << to_json();
    if (!out.flush())
      return "cannot write " + tmp;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot place " + path;
  }
  return {};
}

} // namespace deepinfer::engine
