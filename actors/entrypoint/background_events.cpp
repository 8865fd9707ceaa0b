#include "actors/entrypoint/background_events.hpp"

#include <algorithm>

#include "actors/http/sse_events.hpp"

namespace deepinfer::actors {

void background_events::append(std::string_view chunk) {
  const auto fresh = http::sse_events(chunk);
  if (fresh.empty())
    return;
  std::lock_guard guard{mtx_};
  for (auto e : fresh) {
    for (auto& l : listeners_)
      l.writer->write(std::string{e});
    bytes_ += e.size();
    events_.emplace_back(e);
  }
}

void background_events::end() {
  std::vector<listener> done;
  {
    std::lock_guard guard{mtx_};
    if (ended_)
      return;
    ended_ = true;
    done.swap(listeners_);
  }
  for (auto& l : done)
    l.writer->finish();
}

void background_events::replay(const std::shared_ptr<http::response_writer>& w, int64_t starting_after) {
  uint64_t id = 0;
  {
    std::lock_guard guard{mtx_};
    w->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    const auto first = static_cast<std::size_t>(std::max<int64_t>(starting_after + 1, 0));
    std::string out;
    for (std::size_t k = first; k < events_.size(); ++k)
      out += events_[k];
    w->write(std::move(out));
    if (ended_) {
      w->finish();
      return;
    }
    id = next_listener_++;
    listeners_.push_back({id, w});
  }
  // Outside the lock: a client already gone runs the callback at once.
  w->on_disconnect([weak = weak_from_this(), id] {
    if (auto self = weak.lock())
      self->drop(id);
  });
}

void background_events::drop(uint64_t id) {
  std::lock_guard guard{mtx_};
  std::erase_if(listeners_, [&](const listener& l) { return l.id == id; });
}

std::size_t background_events::bytes() const {
  std::lock_guard guard{mtx_};
  return bytes_;
}

std::size_t background_events::size() const {
  std::lock_guard guard{mtx_};
  return events_.size();
}

bool background_events::ended() const {
  std::lock_guard guard{mtx_};
  return ended_;
}

void recording_writer::send(http::http_response response) {
  inner_->send(std::move(response));
  events_->end();
}

void recording_writer::start_stream(unsigned status, std::string content_type, header_list headers) {
  inner_->start_stream(status, std::move(content_type), std::move(headers));
}

void recording_writer::write(std::string chunk) {
  events_->append(chunk);
  inner_->write(std::move(chunk));
}

void recording_writer::finish() {
  inner_->finish();
  events_->end();
}

void recording_writer::on_disconnect(std::function<void()> callback) { inner_->on_disconnect(std::move(callback)); }

} // namespace deepinfer::actors
