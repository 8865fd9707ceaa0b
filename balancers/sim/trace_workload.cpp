#include "balancers/sim/trace_workload.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace deepinfer::balancers::sim {

trace_workload::row trace_workload::parse_mooncake(const std::string& line) {
  const auto j = nlohmann::json::parse(line);
  row r;
  r.t = j.at("timestamp").get<double>() / 1000.0;
  r.input_len = j.at("input_length").get<int64_t>();
  r.output_len = j.at("output_length").get<int64_t>();
  r.hash_ids = j.at("hash_ids").get<std::vector<uint32_t>>();
  return r;
}

trace_workload::row trace_workload::parse_azure(const std::string& line) {
  // `2023-11-16 18:17:03.9799600,4808,10`: seconds since midnight, then the two counts.
  row r;
  const auto c1 = line.find(',');
  const auto c2 = line.find(',', c1 + 1);
  if (c1 == std::string::npos || c2 == std::string::npos || c1 < 8)
    throw std::runtime_error("bad azure row: " + line);
  const auto sp = line.find(' ');
  const std::string hms = line.substr(sp + 1, c1 - sp - 1);
  r.t = std::stod(hms.substr(0, 2)) * 3600.0 + std::stod(hms.substr(3, 2)) * 60.0 + std::stod(hms.substr(6));
  r.input_len = std::stoll(line.substr(c1 + 1, c2 - c1 - 1));
  r.output_len = std::stoll(line.substr(c2 + 1));
  return r;
}

std::vector<uint64_t> trace_workload::chain_of(const row& r, uint64_t unique_salt) {
  const int64_t blocks = r.input_len / 128;
  std::vector<uint64_t> out;
  out.reserve(static_cast<size_t>(blocks));
  for (int64_t k = 0; k < blocks; ++k) {
    const auto big = static_cast<size_t>(k / 4);
    // Without ids (Azure) every block is unique to its request.
    const uint64_t base = big < r.hash_ids.size() ? r.hash_ids[big] : (unique_salt << 20) + big + (1ULL << 62);
    out.push_back(mix64(base * 4 + static_cast<uint64_t>(k % 4)));
  }
  return out;
}

trace_workload::trace_workload(const config& cfg) : cfg_(cfg) {
  std::ifstream in(cfg.path);
  if (!in)
    throw std::runtime_error("cannot open trace " + cfg.path);
  const bool csv = cfg.path.size() > 4 && cfg.path.substr(cfg.path.size() - 4) == ".csv";
  name_ = csv ? "azure" : "mooncake";
  std::string line;
  if (csv)
    std::getline(in, line); // header
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    rows_.push_back(csv ? parse_azure(line) : parse_mooncake(line));
    if (cfg.max_requests > 0 && static_cast<int64_t>(rows_.size()) >= cfg.max_requests)
      break;
  }
  if (rows_.empty())
    throw std::runtime_error("empty trace " + cfg.path);
  const double t0 = rows_.front().t;
  for (auto& r : rows_)
    r.t = (r.t - t0) / cfg.time_scale;
}

std::optional<sim_request> trace_workload::next() {
  if (pos_ >= rows_.size())
    return std::nullopt;
  const auto& r = rows_[pos_];
  sim_request q;
  q.id = pos_;
  q.arrival = r.t;
  q.input_len = r.input_len;
  q.output_len = std::max<int64_t>(1, r.output_len);
  q.chain = chain_of(r, pos_);
  q.prompt_blocks = static_cast<int64_t>(q.chain.size());
  ++pos_;
  return q;
}

} // namespace deepinfer::balancers::sim
