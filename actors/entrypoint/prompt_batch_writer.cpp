#include "actors/entrypoint/prompt_batch_writer.hpp"

#include "actors/http/sse_events.hpp"

namespace deepinfer::actors {

namespace {

using json = nlohmann::ordered_json;

/// Adds the numbers of `from` into `into` (usage objects, nested details included).
void add_usage(json& into, const json& from) {
  if (!from.is_object())
    return;
  if (!into.is_object())
    into = json::object();
  for (const auto& [k, v] : from.items()) {
    if (v.is_number_integer())
      into[k] = into.value(k, int64_t{0}) + v.get<int64_t>();
    else if (v.is_object())
      add_usage(into[k], v);
  }
}

std::string event(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

} // namespace

class prompt_batch_writer::part_writer final : public http::response_writer {
public:
  part_writer(std::shared_ptr<prompt_batch_writer> m, int i) : m_(std::move(m)), i_(i) {}
  void send(http::http_response r) override { m_->on_send(i_, std::move(r)); }
  void start_stream(unsigned, std::string, header_list) override { m_->on_start(i_); }
  void write(std::string chunk) override { m_->on_write(i_, chunk); }
  void finish() override { m_->on_finish(i_); }
  void on_disconnect(std::function<void()> cb) override { m_->on_part_disconnect(i_, std::move(cb)); }

private:
  std::shared_ptr<prompt_batch_writer> m_;
  int i_;
};

std::shared_ptr<prompt_batch_writer> prompt_batch_writer::make(std::shared_ptr<http::response_writer> client,
                                                               int parts, int n) {
  std::shared_ptr<prompt_batch_writer> m{new prompt_batch_writer(std::move(client), parts, n)};
  // The client leaving cancels every part.
  m->client_->on_disconnect([weak = std::weak_ptr<prompt_batch_writer>(m)] {
    if (auto self = weak.lock()) {
      std::lock_guard guard{self->mtx_};
      self->answered_ = true;
      self->cancel_all_locked();
    }
  });
  return m;
}

prompt_batch_writer::prompt_batch_writer(std::shared_ptr<http::response_writer> client, int parts, int n)
    : client_(std::move(client)), parts_(parts), n_(std::max(n, 1)), bodies_(static_cast<size_t>(parts)),
      cancels_(static_cast<size_t>(parts)), cancelled_(static_cast<size_t>(parts), false) {}

std::shared_ptr<http::response_writer> prompt_batch_writer::part(int i) {
  return std::make_shared<part_writer>(shared_from_this(), i);
}

void prompt_batch_writer::cancel_all_locked() {
  for (size_t k = 0; k < cancels_.size(); ++k)
    if (!cancelled_[k]) {
      cancelled_[k] = true;
      if (cancels_[k])
        cancels_[k]();
    }
}

void prompt_batch_writer::on_part_disconnect(int i, std::function<void()> cb) {
  std::lock_guard guard{mtx_};
  auto k = static_cast<size_t>(i);
  if (cancelled_[k]) { // the batch ended already: cancel this part at once
    if (cb)
      cb();
    return;
  }
  cancels_[k] = std::move(cb);
}

nlohmann::ordered_json prompt_batch_writer::rewrite(int i, nlohmann::ordered_json chunk) {
  // One completion, one id and creation time (each prompt's request drew its own): the first
  // part's to answer.
  for (const char* key : {"id", "created"})
    if (auto f = chunk.find(key); f != chunk.end()) {
      auto& kept = head_[key];
      if (kept.is_null())
        kept = *f;
      else
        *f = kept;
    }
  if (auto c = chunk.find("choices"); c != chunk.end() && c->is_array())
    for (auto& choice : *c)
      if (choice.contains("index") && choice["index"].is_number_integer())
        choice["index"] = static_cast<int64_t>(i) * n_ + choice["index"].get<int64_t>();
  return chunk;
}

void prompt_batch_writer::on_send(int i, http::http_response r) {
  std::lock_guard guard{mtx_};
  if (answered_)
    return;
  cancelled_[static_cast<size_t>(i)] = true; // answered: nothing to cancel
  if (r.status != 200) {
    if (streaming_) { // the stream is out: this prompt's error is an event in it
      auto body = json::parse(r.body, nullptr, false);
      client_->write(event(body.is_discarded() ? json{{"error", {{"message", r.body}}}} : body));
      if (++finished_ == parts_)
        end_stream_locked();
      return;
    }
    // The whole request fails as this prompt did (a prompt too long, say): the others stop.
    answered_ = true;
    client_->send(std::move(r));
    cancel_all_locked();
    return;
  }
  bodies_[static_cast<size_t>(i)] = std::move(r.body);
  if (++finished_ == parts_)
    merge_and_send_locked();
}

void prompt_batch_writer::merge_and_send_locked() {
  answered_ = true;
  json merged;
  json choices = json::array();
  json usage;
  for (int i = 0; i < parts_; ++i) {
    auto b = json::parse(bodies_[static_cast<size_t>(i)], nullptr, false);
    if (b.is_discarded() || !b.is_object()) {
      client_->send_error(500, "a prompt of the batch answered a body that is not JSON", "");
      return;
    }
    b = rewrite(i, std::move(b));
    for (auto& c : b["choices"])
      choices.push_back(std::move(c));
    add_usage(usage, b.value("usage", json()));
    if (i == 0)
      merged = std::move(b);
  }
  merged["choices"] = std::move(choices);
  if (!usage.is_null())
    merged["usage"] = std::move(usage);
  client_->send_json(200, merged.dump(-1, ' ', false, json::error_handler_t::replace));
}

void prompt_batch_writer::on_start(int) {
  std::lock_guard guard{mtx_};
  if (answered_ || streaming_)
    return;
  streaming_ = true;
  client_->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
}

void prompt_batch_writer::on_write(int i, const std::string& chunk) {
  std::lock_guard guard{mtx_};
  if (answered_ || !streaming_)
    return;
  std::string out;
  for (auto ev : http::sse_events(chunk)) {
    if (!ev.starts_with("data: ")) {
      out += ev;
      continue;
    }
    auto data = ev.substr(6);
    while (!data.empty() && (data.back() == '\n' || data.back() == '\r'))
      data.remove_suffix(1);
    if (data == "[DONE]")
      continue; // one [DONE] at the end of all
    auto j = json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      out += ev;
      continue;
    }
    // The usage chunk (include_usage: no choices, the part's usage): summed into one at the end.
    if (auto c = j.find("choices"); c != j.end() && c->empty() && j.contains("usage") && j["usage"].is_object()) {
      add_usage(usage_, j["usage"]);
      last_chunk_head_ = rewrite(i, std::move(j));
      continue;
    }
    out += event(rewrite(i, std::move(j)));
  }
  client_->write(std::move(out));
}

void prompt_batch_writer::on_finish(int i) {
  std::lock_guard guard{mtx_};
  cancelled_[static_cast<size_t>(i)] = true;
  if (answered_ || !streaming_)
    return;
  if (++finished_ == parts_)
    end_stream_locked();
}

void prompt_batch_writer::end_stream_locked() {
  answered_ = true;
  if (!usage_.is_null()) {
    auto u = last_chunk_head_;
    u["usage"] = usage_;
    client_->write(event(u));
  }
  client_->write("data: [DONE]\n\n");
  client_->finish();
}

} // namespace deepinfer::actors
