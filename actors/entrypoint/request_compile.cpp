#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>

#include "actors/entrypoint/request_prepare.hpp"
#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "actors/errors.hpp"
#include "actors/log.hpp"

// A request's structured-output constraint compiles before the request is placed (issue 19,
// DESIGN §5.3), on an `so` node or this node's compiler actor: never on the request actor's
// thread, which a scheduler worker runs (a compile may take up to the compile timeout).

namespace deepinfer::actors {

namespace {

/// The compiler that compiles the request's constraint: an `so` node's (round robin over those
/// the view shows alive), else this node's own.
so_compiler_actor pick_so_compiler(entrypoint::context& ctx) {
  std::vector<caf::strong_actor_ptr> remote;
  for (const auto& n : ctx.cluster->get().view.nodes)
    if (n.state == node_state::alive && n.info.so_compiler)
      remote.push_back(n.info.so_compiler);
  if (remote.empty())
    return ctx.so_compiler;
  return caf::actor_cast<so_compiler_actor>(remote[ctx.so_next++ % remote.size()]);
}

/// What a request waiting for its constraint's compile keeps: the parsed request, its fetched
/// images, the constraint, and how long one compiler may take.
struct awaiting_compile {
  recipe::conversation conv;
  fetched_images fetched;
  constraint_job job;
  std::chrono::milliseconds wait{0};
  /// Bumped at every ask: an answer (or down message) of an earlier ask is stale.
  uint64_t ask = 0;
  /// The `so` node's compiler asked now (monitored: its node dying ends the wait at once).
  caf::actor_addr remote;
};

/// Asks `compiler` for the request's constraint; on success starts the request. A refusal is the
/// API's 400; an `so` node that is gone or too slow leaves the compile to this node's own
/// compiler (then a 503 if that fails too).
void ask_compiler(request_pointer self, so_compiler_actor compiler, std::shared_ptr<awaiting_compile> w);

/// The `so` node's compiler did not answer (gone, or too slow): this node's compiler does it.
void ask_locally(request_pointer self, std::shared_ptr<awaiting_compile> w, const std::string& why) {
  log().warn("request={} an so node's compiler did not answer ({}); compiling on this node", self->state.id, why);
  if (auto* c = self->state.ctx->so_compiles)
    c->with({"so_node", "unanswered"}).inc();
  if (w->remote)
    self->demonitor(w->remote);
  w->remote = {};
  ask_compiler(self, self->state.ctx->so_compiler, std::move(w));
}

void ask_compiler(request_pointer self, so_compiler_actor compiler, std::shared_ptr<awaiting_compile> w) {
  const bool local = compiler == self->state.ctx->so_compiler;
  const auto ask = ++w->ask;
  if (!local) {
    // A proxy of a node already gone answers nothing until the request times out.
    w->remote = compiler.address();
    self->monitor(compiler);
  }
  auto count = [self, local](const char* result) {
    if (auto* c = self->state.ctx->so_compiles)
      c->with({local ? "local" : "so_node", result}).inc();
  };
  log().debug("request={} compiling its constraint on {}", self->state.id, local ? "this node" : "an so node");
  self->request(compiler, w->wait, compile_atom::value, w->job.spec)
    .then(
      [=](so_compiled& r) {
        auto& st = self->state;
        if (st.done || ask != w->ask)
          return;
        if (w->remote)
          self->demonitor(w->remote);
        count(r.error ? "refused" : "compiled");
        if (r.error) {
          auto why = error_text(r.error);
          refuse_request(self, w->job.refused(why.empty() ? self->system().render(r.error) : why));
          return;
        }
        // The output limit is checked against its shortest output once the prompt's length is
        // known (prepare_conversation: a default limit is lowered to what the context leaves).
        st.format_shortest = r.shortest_tokens;
        if (auto next = start_request(self, std::move(w->conv), w->fetched))
          self->become(std::move(next));
      },
      [=](caf::error& e) {
        auto& st = self->state;
        if (st.done || ask != w->ask)
          return;
        if (!local)
          return ask_locally(self, w, self->system().render(e));
        count("unanswered");
        log().warn("request={} this node's structured-output compiler did not answer: {}", st.id,
                   self->system().render(e));
        recipe::api_error err;
        err.api = st.conv.api;
        err.status = 503;
        err.type = err.api == recipe::api_kind::messages ? "overloaded_error" : "server_error";
        err.message = "The structured-output compiler did not answer in time; retry the request.";
        refuse_request(self, err);
      });
}

} // namespace

/// Has the request's constraint compiled (issue 19, DESIGN §5.3: asynchronously, before the
/// request is placed, on an `so` node or this node's compiler actor, whose caches the ranks of
/// their nodes mask with), then starts it; a client gone meanwhile ends it.
caf::behavior compile_then_start(request_pointer self, recipe::conversation conv, fetched_images fetched) {
  auto& st = self->state;
  auto job = constraint_job_of(*st.ctx, conv);
  if (!job) {
    refuse_request(self, job.error());
    return {};
  }
  if (!*job || !st.ctx->so_compiler)
    return start_request(self, std::move(conv), fetched);
  auto w = std::make_shared<awaiting_compile>();
  w->conv = std::move(conv);
  w->fetched = std::move(fetched);
  w->job = std::move(**job);
  w->wait = structured_output::answer_wait(st.ctx->cfg.so_compile_timeout);
  ask_compiler(self, pick_so_compiler(*st.ctx), w);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (!self->state.done && w->remote && dm.source == w->remote)
      ask_locally(self, w, "its node is gone: " + self->system().render(dm.reason));
  });
  return {
    [=](cancel_atom, uint64_t) { abandon_request(self, "its constraint compiled"); },
    // No deadline runs before admission: this is the background parse's fallback timer, stale.
    [=](deadline_atom, uint64_t) {},
  };
}

} // namespace deepinfer::actors
