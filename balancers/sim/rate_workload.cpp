#include "balancers/sim/rate_workload.hpp"

#include "balancers/sim/trace_workload.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace deepinfer::balancers::sim {

namespace {

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ','))
    out.push_back(field);
  if (!line.empty() && line.back() == ',')
    out.emplace_back();
  return out;
}

double number(const std::string& s) {
  return s.empty() ? 0.0 : std::stod(s);
}

std::vector<rate_workload::window> read_rows(const std::string& path, bool aggregate) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open rate file " + path);
  std::vector<rate_workload::window> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || !(std::isdigit(static_cast<unsigned char>(line[0]))))
      continue; // header
    out.push_back(aggregate ? rate_workload::parse_aggregate_row(line) : rate_workload::parse_client_row(line));
  }
  return out;
}

std::string stem(const std::string& path) {
  return std::filesystem::path(path).filename().replace_extension().string();
}

} // namespace

rate_workload::window rate_workload::parse_client_row(const std::string& line) {
  const auto f = split(line);
  if (f.size() < 6)
    throw std::runtime_error("bad ServeGen client row: " + line);
  window w;
  w.start_s = number(f[0]);
  w.rate_rps = number(f[1]);
  const std::string& law = f[3];
  if (law.empty() || w.rate_rps <= 0.0) {
    w.rate_rps = 0.0;
  } else if (law == "Gamma") {
    w.law = gap_law::gamma;
    w.shape = number(f[4]);
    w.scale = number(f[5]);
  } else if (law == "Weibull") {
    w.law = gap_law::weibull;
    w.shape = number(f[4]);
    w.scale = number(f[5]);
  } else {
    w.law = gap_law::exponential; // `Exponential`, and any other fit: its rate is what is known
    w.scale = 1.0 / w.rate_rps;
  }
  if ((w.law != gap_law::exponential) && (w.shape <= 0.0 || w.scale <= 0.0)) {
    w.law = gap_law::exponential;
    w.scale = 1.0 / w.rate_rps;
  }
  // The fit gives the shape (burstiness); its mean gap need not be the window's measured rate
  // (a heavy-tailed fit's mean is off), so the scale is set for a mean gap of 1 / rate.
  if (w.law == gap_law::gamma)
    w.scale = 1.0 / (w.rate_rps * w.shape);
  else if (w.law == gap_law::weibull)
    w.scale = 1.0 / (w.rate_rps * std::tgamma(1.0 + 1.0 / w.shape));
  return w;
}

rate_workload::window rate_workload::parse_aggregate_row(const std::string& line) {
  const auto f = split(line);
  if (f.size() < 4)
    throw std::runtime_error("bad ServeGen aggregate row: " + line);
  window w;
  w.start_s = number(f[0]);
  w.rate_rps = number(f[1]);
  const double cv = number(f[3]);
  if (w.rate_rps <= 0.0)
    return w;
  // Gamma with mean 1/rate and this CV: shape 1/cv^2; a missing CV is Poisson.
  w.law = gap_law::gamma;
  w.shape = cv > 0.0 ? 1.0 / (cv * cv) : 1.0;
  w.scale = 1.0 / (w.rate_rps * w.shape);
  return w;
}

rate_workload::rate_workload(const config& cfg) : seed_(cfg.seed) {
  // 1. the rate curves: a directory of clients or one aggregate file
  std::vector<std::vector<window>> clients;
  if (std::filesystem::is_directory(cfg.rates)) {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(cfg.rates))
      if (e.path().string().ends_with("-trace.csv"))
        files.push_back(e.path().string());
    std::sort(files.begin(), files.end()); // a fixed order: the same seed gives the same arrivals
    for (const auto& f : files)
      clients.push_back(read_rows(f, false));
  } else {
    clients.push_back(read_rows(cfg.rates, true));
  }
  if (clients.empty())
    throw std::runtime_error("no rate curves in " + cfg.rates);
  if (cfg.rate_scale != 1.0)
    for (auto& c : clients)
      for (auto& w : c) {
        w.rate_rps *= cfg.rate_scale;
        if (w.law == gap_law::exponential)
          w.scale = w.rate_rps > 0.0 ? 1.0 / w.rate_rps : 0.0;
        else
          w.scale /= cfg.rate_scale; // same shape, gaps shrink with the rate
      }
  // 2. the length mix
  trace_workload lengths({.path = cfg.lengths});
  while (auto r = lengths.next())
    lengths_.push_back({r->input_len, r->output_len});
  name_ = "servegen:" + stem(cfg.rates) + "+" + lengths.name();
  const double to = cfg.duration_s > 0.0 ? cfg.start_s + cfg.duration_s : 1e300;
  generate(clients, cfg.window_s, cfg.start_s, to);
}

rate_workload::rate_workload(const std::vector<std::vector<window>>& clients, std::vector<length> lengths,
                             double window_s, uint64_t seed, std::string name)
    : name_(std::move(name)), lengths_(std::move(lengths)), seed_(seed) {
  generate(clients, window_s, 0.0, 1e300);
}

void rate_workload::generate(const std::vector<std::vector<window>>& clients, double window_s, double from,
                             double to) {
  if (lengths_.empty())
    throw std::runtime_error("rate workload without lengths");
  std::mt19937_64 rng(seed_);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<uint32_t> pick(0, static_cast<uint32_t>(lengths_.size() - 1));
  for (const auto& client : clients)
    for (const auto& w : client) {
      if (w.rate_rps <= 0.0 || w.start_s < from || w.start_s >= to)
        continue;
      const double end = w.start_s + window_s;
      const auto gap = [&] {
        switch (w.law) {
        case gap_law::gamma: return std::gamma_distribution<double>(w.shape, w.scale)(rng);
        case gap_law::weibull: return std::weibull_distribution<double>(w.shape, w.scale)(rng);
        case gap_law::exponential: break;
        }
        return std::exponential_distribution<double>(w.rate_rps)(rng);
      };
      // The process restarts at the window: its first arrival a uniform fraction of a gap in.
      for (double t = w.start_s + unit(rng) * gap(); t < end; t += gap())
        arrivals_.push_back({t - from, pick(rng)});
    }
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [](const arrival& a, const arrival& b) { return a.t < b.t; });
}

std::optional<sim_request> rate_workload::next() {
  if (pos_ >= arrivals_.size())
    return std::nullopt;
  const auto& a = arrivals_[pos_];
  const auto& l = lengths_[a.length];
  sim_request q;
  q.id = pos_;
  q.arrival = a.t;
  q.input_len = l.input_len;
  q.output_len = std::max<int64_t>(1, l.output_len);
  q.prompt_blocks = 0; // no block ids: nothing to hit or store
  ++pos_;
  return q;
}

} // namespace deepinfer::balancers::sim
