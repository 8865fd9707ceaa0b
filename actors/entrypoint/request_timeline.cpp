#include "actors/entrypoint/request_timeline.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace deepinfer::actors {

namespace {

double seconds_between(request_timeline::clock::time_point a, request_timeline::clock::time_point b) {
  return std::max(0.0, std::chrono::duration<double>(b - a).count());
}

} // namespace

std::string_view request_timeline::name(stage s) {
  switch (s) {
    case stage::read: return "read";
    case stage::dispatch: return "dispatch";
    case stage::parse: return "parse";
    case stage::fetch: return "fetch";
    case stage::prepare: return "prepare";
    case stage::admit: return "admit";
    case stage::vision: return "vision";
    case stage::decode_pick: return "decode_pick";
    case stage::swa: return "swa";
    case stage::prefill_pick: return "prefill_pick";
    case stage::prefill: return "prefill";
    case stage::decode: return "decode";
    case stage::count_: break;
  }
  return "unknown";
}

void request_timeline::begin(clock::time_point first_byte, clock::time_point dispatched, clock::time_point now) {
  // A request that did not come over HTTP (an embedder's) has no first byte: it starts now.
  if (first_byte == clock::time_point{})
    first_byte = dispatched == clock::time_point{} ? now : dispatched;
  if (dispatched == clock::time_point{})
    dispatched = first_byte;
  first_ = first_byte;
  seconds_ = {};
  ran_ = {};
  rank_reported_ = false;
  seconds_[static_cast<std::size_t>(stage::read)] = seconds_between(first_byte, dispatched);
  seconds_[static_cast<std::size_t>(stage::dispatch)] = seconds_between(dispatched, now);
  ran_[static_cast<std::size_t>(stage::read)] = ran_[static_cast<std::size_t>(stage::dispatch)] = true;
  last_ = now;
  begun_ = true;
}

void request_timeline::close(stage s, clock::time_point now) {
  if (!begun_)
    begin({}, {}, now);
  const auto k = static_cast<std::size_t>(s);
  if (k >= stages)
    return;
  seconds_[k] += seconds_between(last_, now);
  ran_[k] = true;
  last_ = std::max(last_, now);
}

void request_timeline::close_prefill(rank_times rank, clock::time_point now) {
  close(stage::prefill, now);
  rank_reported_ = true;
  rank_ = rank;
}

std::vector<request_timeline::entry> request_timeline::entries(clock::time_point end) const {
  std::vector<entry> out;
  for (std::size_t k = 0; k < stages; ++k) {
    if (!ran_[k])
      continue;
    if (static_cast<stage>(k) != stage::prefill || !rank_reported_) {
      out.push_back({name(static_cast<stage>(k)), seconds_[k]});
      continue;
    }
    // The round trip's parts, each clamped into what is left of it, so they never go negative
    // or past it (two clocks tick apart; a resubmission's earlier trips are in the trip too).
    double left = seconds_[k];
    auto take = [&](double want) {
      const double got = std::clamp(want, 0.0, left);
      left -= got;
      return got;
    };
    if (rank_.send >= 0) {
      const double send = take(rank_.send);
      const double busy = std::min(std::max(0.0, rank_.busy), send);
      out.push_back({"prefill_send", send - busy});
      out.push_back({"rank_busy", busy});
      out.push_back({"rank_queue", take(rank_.queue)});
      out.push_back({"rank_step", take(rank_.step)});
      out.push_back({"prefill_return", left});
    } else {
      const double queue = take(rank_.queue), step = take(rank_.step);
      out.push_back({"prefill_transit", left});
      out.push_back({"rank_queue", queue});
      out.push_back({"rank_step", step});
    }
  }
  out.push_back({"total", begun_ ? seconds_between(first_, end) : 0.0});
  return out;
}

std::string request_timeline::server_timing(const std::vector<entry>& entries) {
  std::string out;
  for (const auto& e : entries) {
    if (!out.empty())
      out += ", ";
    out += fmt::format("{};dur={:.3f}", e.name, e.seconds * 1000.0);
  }
  return out;
}

} // namespace deepinfer::actors
