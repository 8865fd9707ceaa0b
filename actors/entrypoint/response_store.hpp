#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/entrypoint/background_events.hpp"
#include "recipe/protocol/conversation.hpp"

namespace deepinfer::actors {

/// The Responses API's stored responses (`store`, default true), per entrypoint process: what
/// `GET /v1/responses/{id}` returns and what `previous_response_id` continues. Bounded by age and
/// by size; the oldest go first. Keyed by tenant (the API key) as well, so a response is never
/// visible to another key. Thread-safe: request actors put, HTTP I/O threads get and delete.
class response_store {
public:
  struct limits {
    std::chrono::seconds ttl{3600};
    std::size_t max_bytes = std::size_t{256} << 20;
  };
  struct entry {
    /// The response object as a non-streaming request would have returned it.
    std::string body;
    /// The conversation up to and including this response's output, without the instructions
    /// (which a continuation does not inherit, as OpenAI specifies).
    std::vector<recipe::message> history;
    /// A background turn (`background: true`) still running has a `cancel`, which asks the turn
    /// to stop (thread-safe; the turn then stores its end, status `cancelled`); its `body` is its
    /// response as created (status `queued`) and `history` is empty. Once it ends its entry is
    /// replaced by one without `cancel`.
    bool background = false;
    std::function<void()> cancel;
    bool running() const { return static_cast<bool>(cancel); }
    /// A background turn's SSE events (whether its create call streamed or not): what a GET
    /// with `stream=true` replays and follows. Null for a turn that did not run in the background.
    std::shared_ptr<background_events> events;
  };
  using clock = std::chrono::steady_clock;

  explicit response_store(limits l) : limits_(l) {}

  void put(const std::string& tenant, const std::string& id, entry e, clock::time_point now = clock::now());
  /// `put` only where `id` is still stored (a background turn's end: a client that deleted the
  /// response meanwhile does not see it back). Whether it was.
  bool replace(const std::string& tenant, const std::string& id, entry e, clock::time_point now = clock::now());
  /// Null when unknown, expired, deleted or another tenant's.
  std::shared_ptr<const entry> get(const std::string& tenant, const std::string& id,
                                   clock::time_point now = clock::now());
  /// Whether it was there.
  bool erase(const std::string& tenant, const std::string& id);
  std::size_t size() const;
  std::size_t bytes() const;

private:
  struct node {
    std::string key;
    clock::time_point stored;
    std::size_t bytes;
    std::shared_ptr<const entry> value;
  };
  void expire(clock::time_point now);
  bool store(const std::string& tenant, const std::string& id, entry e, clock::time_point now, bool only_replace);
  void drop(std::list<node>::iterator it);

  limits limits_;
  mutable std::mutex mtx_;
  std::list<node> order_; ///< oldest first
  std::unordered_map<std::string, std::list<node>::iterator> index_;
  std::size_t bytes_ = 0;
};

/// A stored turn's approximate footprint: its body and the text of its history.
std::size_t footprint(const response_store::entry& e);

} // namespace deepinfer::actors
