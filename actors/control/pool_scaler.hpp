#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace deepinfer::actors {

/// The controller's bookkeeping of the ready pool (issue 17, DESIGN §6.5) as a plain class: which
/// pool nodes are idle, which serve an instance the autoscaler gave them, and what to do to reach
/// the autoscaler's targets. Only instances on pool nodes are ever taken away: the manifest's
/// fixed instances are the floor the pool grows from.
///
/// An assignment lives through three phases: `starting` (asked, not yet answered), `serving`
/// (the node said yes; its supervisor reports the instance) and `leaving` (drain asked). Starting
/// and serving ones count as instances of their role at once, so a decision taken while the
/// model loads does not ask again; leaving ones count as gone, so two decisions do not drain two.
class pool_scaler {
public:
  enum class phase : uint8_t { starting, serving, leaving };

  struct assignment {
    node_role role = node_role::decode;
    phase state = phase::starting;
    uint64_t order = 0; ///< when it was made (the latest goes first on scale-down)
  };

  struct action {
    enum class kind : uint8_t { assign, release } what = kind::assign;
    std::string node;
    node_role role = node_role::decode;
  };

  /// What the autoscaler counts now.
  struct counts {
    int prefill = 0;
    int decode = 0;
    /// Of those, the ones that do not serve yet (a pool node loading the model, a restart).
    int prefill_starting = 0;
    int decode_starting = 0;
    uint32_t prefill_ranks = 0; ///< healthy ranks of the running prefill instances (quota)
    int idle_pool = 0;          ///< alive pool nodes serving nothing
  };

  /// The plan toward the targets, and the roles whose scale-up waits for an idle pool node.
  struct plan_result {
    std::vector<action> actions;
    std::vector<node_role> waiting;
  };

  counts count(const membership_view& view) const;

  /// Brings the bookkeeping in line with the view (a controller that restarted, an answer that
  /// was lost): a pool node's serving instance it does not know is adopted as `serving`, a
  /// `leaving` one whose instance reports `stopped` is idle again. `plan` calls it first.
  void reconcile(const membership_view& view);

  /// Actions toward `prefill_target` / `decode_target` instances; their assignments are recorded
  /// (`starting` / `leaving`) as they are planned. Scale-up picks idle pool nodes that may take the
  /// role (in name order); scale-down the latest assigned serving instance of the role.
  plan_result plan(const membership_view& view, int prefill_target, int decode_target);

  /// The node answered an `assign`: serving, or (false) the assignment is dropped.
  void assigned(const std::string& node, bool ok);
  /// The node answered an `unassign` (or its drain failed): it is idle in the pool again.
  void released(const std::string& node);
  /// The node died, left or started again (a new incarnation serves nothing): forget it.
  void forget(const std::string& node);

  /// The node's assignment, if any.
  const assignment* find(const std::string& node) const;

private:
  static bool may_take(const node_info& n, node_role role);
  bool counts_as_instance(const membership_view& view, const instance_status& i) const;

  std::map<std::string, assignment> assigned_;
  uint64_t next_order_ = 0;
};

/// The name of an assignment phase (logs).
const char* to_string(pool_scaler::phase p);

} // namespace deepinfer::actors
