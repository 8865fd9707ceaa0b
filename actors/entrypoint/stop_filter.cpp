#include "actors/entrypoint/stop_filter.hpp"

#include <algorithm>

namespace deepinfer::actors {

using recipe::stream_event;

stop_filter::stop_filter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

void stop_filter::release(std::vector<stream_event>& out, std::size_t n) {
  if (n == 0)
    return;
  stream_event e;
  e.type = stream_event::kind::content;
  e.text = held_.substr(0, n);
  held_.erase(0, n);
  out.push_back(std::move(e));
}

std::vector<stream_event> stop_filter::apply(std::span<const stream_event> events) {
  std::vector<stream_event> out;
  if (stopped_)
    return out;
  if (stops_.empty()) {
    out.assign(events.begin(), events.end());
    return out;
  }
  for (auto& ev : events) {
    if (ev.type != stream_event::kind::content) {
      release(out, held_.size());
      out.push_back(ev);
      continue;
    }
    held_ += ev.text;
    auto cut = std::string::npos;
    for (auto& s : stops_)
      cut = std::min(cut, held_.find(s));
    if (cut != std::string::npos) {
      release(out, cut);
      held_.clear();
      stream_event fin;
      fin.type = stream_event::kind::finish;
      fin.reason = recipe::finish_reason::stop;
      out.push_back(std::move(fin));
      stopped_ = true;
      return out;
    }
    // Hold back the longest tail that is a proper prefix of some stop string.
    std::size_t keep = 0;
    for (auto& s : stops_)
      for (auto k = std::min(s.size() - 1, held_.size()); k > keep; --k)
        if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
          keep = k;
          break;
        }
    release(out, held_.size() - keep);
  }
  return out;
}

} // namespace deepinfer::actors
