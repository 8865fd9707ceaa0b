#pragma once

#include <mutex>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// The latest membership view a node knows, shared between its node agent (writer) and plain
/// threads such as the HTTP server (readers). Readers get copies; nothing blocks for long.
class cluster_snapshot {
public:
  /// A consistent copy of what this node knows.
  struct state {
    node_info self;
    bool controller_connected = false;
    membership_view view;
  };

  void set_self(const node_info& self) {
    std::lock_guard<std::mutex> guard{mtx_};
    state_.self = self;
  }

  void set_view(membership_view view) {
    std::lock_guard<std::mutex> guard{mtx_};
    // Views can arrive out of order from a controller and its replacement; keep the newest one
    // unless the controller restarted (its versions start again from zero).
    if (!state_.controller_connected || view.version >= state_.view.version)
      state_.view = std::move(view);
    state_.controller_connected = true;
  }

  void set_controller_connected(bool connected) {
    std::lock_guard<std::mutex> guard{mtx_};
    state_.controller_connected = connected;
  }

  /// Forgets the view and this node's own actor handles (at shutdown: its rank handles, and the
  /// structured-output compiler's, would keep detached actors, and so the actor system's
  /// destructor, waiting).
  void clear_view() {
    std::lock_guard<std::mutex> guard{mtx_};
    state_.view = {};
    state_.controller_connected = false;
    state_.self.swa_shard = nullptr;
    state_.self.snapshots = nullptr;
    state_.self.so_compiler = nullptr;
  }

  state get() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return state_;
  }

private:
  mutable std::mutex mtx_;
  state state_;
};

} // namespace deepinfer::actors
