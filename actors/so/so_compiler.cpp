#include "actors/so/so_compiler.hpp"

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/errors.hpp"
#include "actors/http/metrics_registry.hpp"
#include "actors/log.hpp"
#include "actors/node/structured_output.hpp"
#include "recipe/structured/compiler.hpp"

namespace deepinfer::actors {

namespace {

struct so_compiler_state {
  std::shared_ptr<structured_output> so;
  http::metrics_registry::counter* compiled = nullptr;
  http::metrics_registry::counter* cached = nullptr;
  http::metrics_registry::counter* refused = nullptr;
  http::metrics_registry::histogram* seconds = nullptr;
};

using so_compiler_pointer = so_compiler_actor::stateful_pointer<so_compiler_state>;

so_compiler_actor::behavior_type so_compiler_behavior(so_compiler_pointer self, std::shared_ptr<structured_output> so,
                                                      std::shared_ptr<http::metrics_registry> metrics) {
  auto& st = self->state;
  st.so = std::move(so);
  if (metrics) {
    auto& total = metrics->add_counter("deepinfer_so_compiles_total",
                                       "Structured-output constraints asked of this node's compiler, by result "
                                       "(compiled, cached, refused).",
                                       {"result"});
    st.compiled = &total.with({"compiled"});
    st.cached = &total.with({"cached"});
    st.refused = &total.with({"refused"});
    st.seconds = &metrics->add_histogram("deepinfer_so_compile_seconds",
                                         "Time to compile one structured-output constraint (cache misses).", {},
                                         {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5})
                   .with({});
  }
  return {
    [=](compile_atom, const std::string& spec) -> so_compiled {
      auto& st = self->state;
      so_compiled out;
      const bool hit = st.so->ready(spec);
      const auto t0 = std::chrono::steady_clock::now();
      auto m = st.so->compile(spec);
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
      if (!m) {
        out.error = make_error(errc::so_refused, m.error());
        log().debug("so: refused a constraint in {} us: {}", us.count(), m.error());
        if (st.refused)
          st.refused->inc();
        return out;
      }
      // Before the size: the shortest completion builds parts of the automata on first use.
      out.shortest_tokens = static_cast<int64_t>((*m)->shortest_completion_length((*m)->start()));
      out.bytes = recipe::so::compiler::bytes_of(**m);
      out.compile_us = hit ? 0 : us.count();
      if (st.compiled) {
        (hit ? st.cached : st.compiled)->inc();
        if (!hit)
          st.seconds->observe(static_cast<double>(us.count()) * 1e-6);
      }
      if (!hit)
        log().debug("so: compiled a constraint in {} us ({} bytes)", us.count(), out.bytes);
      return out;
    },
  };
}

} // namespace

so_compiler_actor spawn_so_compiler(caf::actor_system& sys, std::shared_ptr<structured_output> so,
                                    std::shared_ptr<http::metrics_registry> metrics) {
  return sys.spawn<caf::detached>(so_compiler_behavior, std::move(so), std::move(metrics));
}

} // namespace deepinfer::actors
