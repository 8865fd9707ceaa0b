#include "balancers/sim/trace_workload.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace deepinfer::balancers::sim {

namespace {

/// Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian; H. Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void check_lengths(const trace_workload::row& r) {
  if (r.input_len < 1)
    throw std::runtime_error("input length " + std::to_string(r.input_len) + " (at least 1 token)");
  if (r.output_len < 0)
    throw std::runtime_error("output length " + std::to_string(r.output_len) + " (at least 0 tokens)");
  if (!std::isfinite(r.t))
    throw std::runtime_error("a timestamp that is not a finite number");
}

} // namespace

trace_workload::row trace_workload::parse_mooncake(const std::string& line) {
  const auto j = nlohmann::json::parse(line);
  if (!j.is_object())
    throw std::runtime_error("expected one JSON object per line");
  row r;
  try {
    r.t = j.at("timestamp").get<double>() / 1000.0;
    r.input_len = j.at("input_length").get<int64_t>();
    r.output_len = j.at("output_length").get<int64_t>();
    // Without ids every block is unique to its request, as in a trace of lengths only.
    if (j.contains("hash_ids"))
      r.hash_ids = j.at("hash_ids").get<std::vector<uint32_t>>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string{"expected {\"timestamp\": ms, \"input_length\": N, \"output_length\": N, "
                                         "\"hash_ids\": [...]}: "} + e.what());
  }
  check_lengths(r);
  return r;
}

trace_workload::row trace_workload::parse_azure(const std::string& line) {
  // `2023-11-16 18:17:03.9799600,4808,10`: the arrival (date and time of day), then the
  // context and generated token counts. The date counts: the 2024 traces span a week.
  row r;
  const auto c1 = line.find(',');
  const auto c2 = line.find(',', c1 + 1);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0;
  double sec = 0;
  char tail = 0;
  if (c1 == std::string::npos || c2 == std::string::npos ||
      std::sscanf(line.substr(0, c1).c_str(), "%d-%d-%d %d:%d:%lf%c", &y, &mo, &d, &h, &mi, &sec, &tail) != 6 ||
      mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || !(sec >= 0 && sec < 61))
    throw std::runtime_error("expected `YYYY-MM-DD HH:MM:SS.fff,context tokens,generated tokens`");
  r.day = days_from_civil(y, mo, d);
  r.t = h * 3600.0 + mi * 60.0 + sec;
  try {
    std::size_t used = 0;
    const auto in = line.substr(c1 + 1, c2 - c1 - 1), out = line.substr(c2 + 1);
    r.input_len = std::stoll(in, &used);
    if (used != in.size())
      throw std::invalid_argument(in);
    r.output_len = std::stoll(out, &used);
    if (used != out.size() && out.find_first_not_of(" \r", used) != std::string::npos)
      throw std::invalid_argument(out);
  } catch (const std::logic_error&) {
    throw std::runtime_error("expected `YYYY-MM-DD HH:MM:SS.fff,context tokens,generated tokens`");
  }
  check_lengths(r);
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
  int64_t line_no = csv ? 1 : 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r")
      continue;
    try {
      rows_.push_back(csv ? parse_azure(line) : parse_mooncake(line));
    } catch (const std::exception& e) {
      throw std::runtime_error("trace " + cfg.path + " line " + std::to_string(line_no) + ": " + e.what());
    }
    if (cfg.max_requests > 0 && static_cast<int64_t>(rows_.size()) >= cfg.max_requests)
      break;
  }
  if (rows_.empty())
    throw std::runtime_error("empty trace " + cfg.path);
  // Arrivals in time order (a trace written out of order replays as it happened); the first
  // is time 0.
  std::stable_sort(rows_.begin(), rows_.end(),
                   [](const row& a, const row& b) { return a.day != b.day ? a.day < b.day : a.t < b.t; });
  const int64_t day0 = rows_.front().day;
  const double t0 = rows_.front().t;
  for (auto& r : rows_) {
    r.t = (static_cast<double>(r.day - day0) * 86400.0 + (r.t - t0)) / cfg.time_scale;
    r.day = 0;
  }
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
