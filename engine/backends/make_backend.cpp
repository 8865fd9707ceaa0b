#include "engine/backends/make_backend.hpp"

#include "engine/backends/cpu/cpu_backend.hpp"

namespace deepinfer::engine {

backend_result make_backend(const backend_config& cfg) {
  if (cfg.kind == backend_kind::cuda)
    return make_cuda_backend(cfg);
  return {std::make_unique<cpu_backend>(cpu_backend::config{cfg.threads, cfg.isa}), {}};
}

} // namespace deepinfer::engine
