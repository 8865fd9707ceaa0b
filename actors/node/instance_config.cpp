#include "actors/node/instance_config.hpp"

#include "actors/http/metrics_registry.hpp"
#include "actors/node/structured_output.hpp"
#include "kv/prefix_cache.hpp"

namespace deepinfer::actors {

instance_supervisor_config make_instance_config(const node_runtime_config& node, const instance_spec& spec,
                                                const node_shared_parts& shared) {
  instance_supervisor_config sc;
  sc.instance = node.self.name + "/" + to_string(spec.role);
  if (spec.ordinal > 1)
    sc.instance += "." + std::to_string(spec.ordinal);
  sc.node = node.self.name;
  sc.role = spec.role;
  sc.ranks = spec.ranks;
  sc.ep = spec.ep;
  sc.restart_delay = node.instance_restart_delay;
  sc.drain_grace = spec.drain_grace;
  if (node.serving && (spec.role == node_role::prefill || spec.role == node_role::decode)) {
    sc.engine.model_dir = node.serving->model_dir;
    sc.engine.threads = node.serving->threads_per_rank;
    sc.engine.kv_blocks = spec.role == node_role::decode && node.serving->decode_kv_blocks_per_rank > 0
                            ? node.serving->decode_kv_blocks_per_rank
                            : node.serving->kv_blocks_per_rank;
    sc.engine.cache = shared.cache;
    sc.engine.constraints = shared.constraints;
    sc.engine.so_compiler = shared.compiler;
    sc.engine.so_compile_wait = structured_output::answer_wait(node.serving->so_compile_timeout);
    sc.engine.reads_hits = spec.role == node_role::prefill;
    sc.engine.decoder_mode = node.serving->decoder_mode;
    // Only decode ranks draft: a prefill rank's proposal would not travel with the sequence.
    sc.engine.speculative =
      spec.role == node_role::decode ? node.serving->speculative : std::optional{engine::speculative_mode::off};
    sc.engine.async_scheduling = spec.role == node_role::decode && node.serving->async_scheduling;
    sc.engine.cpu_isa = node.serving->cpu_isa;
    sc.engine.backend = node.serving->backend;
    sc.engine.prefill_cost = node.serving->prefill_cost;
    sc.engine.prefill_step_ns = std::chrono::duration<double, std::nano>(node.serving->prefill_step).count();
    sc.engine.metrics = shared.metrics;
    sc.engine.instance = sc.instance;
    sc.engine.detached = shared.detached;
  } else if (node.serving && spec.role == node_role::vision) {
    // A vision rank (issue 21) runs the model's vision encoder only: the engine's KV pool is
    // one block, it reads and stores no prefix cache, and the entrypoints route images to it.
    sc.engine.model_dir = node.serving->model_dir;
    sc.engine.threads = node.serving->threads_per_rank;
    sc.engine.kv_blocks = 1;
    sc.engine.cpu_isa = node.serving->cpu_isa;
    sc.engine.backend = node.serving->backend;
    sc.engine.encodes_images = true;
    sc.engine.priority = node.serving->vision_priority;
    sc.engine.metrics = shared.metrics;
    sc.engine.instance = sc.instance;
    sc.engine.detached = shared.detached;
  }
  return sc;
}

} // namespace deepinfer::actors
