#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/instance/rank_state.hpp"
#include "actors/log.hpp"
#include "engine/token_constraint.hpp"

// A structured-output request whose constraint this node has not compiled (it compiled on an
// `so` node, or left the cache) waits for the node's compiler actor before it enters the engine
// (issue 19, DESIGN §5.3): compiling in the engine would stall every sequence of the batch for
// up to the compile timeout.

namespace deepinfer::actors {

bool needs_compile(rank_pointer self, const std::string& constraint) {
  const auto& cfg = self->state.cfg.engine;
  return !constraint.empty() && cfg.constraints && cfg.so_compiler && !cfg.constraints->ready(constraint);
}

void compile_then(rank_pointer self, const std::string& constraint, std::function<void(caf::error)> then) {
  const auto& cfg = self->state.cfg.engine;
  log().debug("rank={} compiling a constraint before its request enters the engine", self->state.cfg.rank);
  self->request(cfg.so_compiler, cfg.so_compile_wait, compile_atom::value, constraint)
    .then([then](so_compiled& r) { then(std::move(r.error)); },
          [then](caf::error& e) {
            then(make_error(errc::so_refused, "the node's structured-output compiler did not answer: " +
                                                  error_text(e)));
          });
}

} // namespace deepinfer::actors
