#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "balancers/decode_balancer.hpp"
#include "balancers/prefill_balancer.hpp"

namespace deepinfer::balancers {

/// Where requests run, for the live cluster and for `deepinfer-sim` alike (DESIGN §6.1, §6.2):
/// the seeds' prefill balancer (four length buckets re-divided every round by last round's
/// quota demand; instances *pull* queued jobs while they have compute-quota left; inside an
/// instance the DP rank with the lowest quota load) and the decode balancer over every rank of
/// every decode instance, each sized by its real KV pool, with every request's KV length growing
/// as it generates.
///
/// Instances are named (the membership view's names); the router keeps a stable index per name,
/// so an instance that restarts smaller keeps the load of the ranks it still has. Synchronous and
/// transport-free: the balancer actors own one each (prefill, decode), the simulator one for both.
class serving_router {
public:
  struct config {
    /// Buckets, quota per rank and lending (its `engines` / `ranks_per_engine` are ignored: the
    /// shapes come from `set_prefill_instances`).
    prefill_balancer::config prefill{};
    /// Batch limit per decode rank, and the KV capacity of a rank whose shape does not say.
    decode_balancer::config decode{};
  };

  /// One rank of a named instance.
  struct rank_ref {
    std::string instance;
    uint32_t rank = 0;
    friend bool operator==(const rank_ref&, const rank_ref&) = default;
  };

  /// An instance as the membership view shows it: its healthy ranks and each rank's KV pool.
  struct instance_shape {
    std::string name;
    uint32_t ranks = 0;
    /// KV tokens one rank's pool holds; 0: unknown (decode: `config.decode.max_kv_tokens`).
    int64_t kv_tokens_per_rank = 0;
    /// Prefill: the cost model fitted on the instance's own engine (its node's ISA, threads,
    /// backend), which prices the prefills it pulls; nullopt: the price the submitter gave.
    std::optional<cost_model> prefill_cost = std::nullopt;
  };

  /// A prefill the balancer handed to a rank.
  struct prefill_placement {
    uint64_t id = 0;
    rank_ref where;
  };

  /// One rank's load, for metrics and tests.
  struct rank_load {
    rank_ref where;
    int64_t requests = 0;
    double quota_s = 0.0;      ///< prefill: outstanding compute-quota
    int64_t kv_tokens = 0;     ///< decode: KV held
    int64_t kv_capacity = 0;   ///< decode: what its pool holds
    int64_t kv_reserved = 0;   ///< decode: what its requests may reach
    int64_t placed = 0;        ///< prefill: jobs placed on it so far
  };

  explicit serving_router(const config& cfg);

  // -- membership ------------------------------------------------------------------------------

  /// The running prefill instances now; those missing are down (their queued work stays queued,
  /// their outstanding quota goes with them).
  void set_prefill_instances(std::span<const instance_shape> live);
  /// The running decode instances now; placements on ranks that are gone are forgotten.
  void set_decode_instances(std::span<const instance_shape> live);

  // -- prefill (DESIGN §6.1) -------------------------------------------------------------------

  /// Queues prefill `id` of `input_len` tokens priced at `quota_s` of compute (the fitted cost of
  /// its uncached tokens), of which `cached` are a prefix-cache hit: an instance with a cost
  /// model of its own prices it `cost(input_len - cached, cached)` instead. `cached` < 0: not
  /// known, `quota_s` everywhere. An id already known is ignored.
  void submit_prefill(uint64_t id, int64_t input_len, double quota_s, int64_t cached = -1);
  /// Hands queued prefills to instances that have quota left (call after every submit, finish
  /// and membership change).
  std::vector<prefill_placement> dispatch_prefills();
  /// A chunk of dispatched prefill `id` was computed: releases `quota_s` of its quota now (at
  /// most what it still holds), so the balancer sees only the work left; `finish_prefill`
  /// releases the rest. Queued or unknown ids are ignored.
  void release_prefill(uint64_t id, double quota_s);
  /// `id` is done, failed or abandoned: releases its quota, or takes it off the queue. Unknown
  /// ids are ignored.
  void finish_prefill(uint64_t id);
  /// Starts a new round: buckets re-divided by the demand of the one that ends.
  void new_round();
  std::size_t queued_prefills() const;

  // -- decode (DESIGN §6.2) --------------------------------------------------------------------

  /// Places decode `id` whose KV is `kv_tokens` long now and may reach `reserve_tokens` (prompt
  /// + max_tokens; 0: `kv_tokens`); nullopt when no rank has room (batch, or its pool for the
  /// reservations of what it holds): the caller retries later. Placing a known id again moves it.
  std::optional<rank_ref> place_decode(uint64_t id, int64_t kv_tokens, int64_t reserve_tokens = 0);
  /// Records a placement made before (a request re-announcing itself to a restarted balancer);
  /// false when that rank is not (or no longer) known.
  bool adopt_decode(uint64_t id, const rank_ref& where, int64_t kv_tokens, int64_t reserve_tokens = 0);
  /// `id`'s KV is `kv_tokens` long now (it grows as tokens are generated).
  void grow_decode(uint64_t id, int64_t kv_tokens);
  /// `id` finished, failed or moved away.
  void finish_decode(uint64_t id);

  // -- views -----------------------------------------------------------------------------------

  std::vector<rank_load> prefill_loads() const;
  std::vector<rank_load> decode_loads() const;
  const prefill_balancer& prefill() const { return prefill_; }

private:
  struct prefill_held {
    int engine = -1; ///< -1: queued
    int rank = 0;
    double quota_s = 0.0;
    double released_s = 0.0; ///< by `release_prefill` (`finish_prefill` releases the rest)
    bool reserve = false;    ///< placed on the instance's short reserve
  };
  struct decode_slot {
    rank_ref where;
    bool live = false;
    decode_balancer::rank_state state;
  };
  struct decode_held {
    std::size_t slot = 0;
    int64_t kv_tokens = 0;
    int64_t reserved = 0;
  };

  std::size_t decode_slot_of(const rank_ref& where) const;
  void release_decode(const decode_held& h);

  config cfg_;
  prefill_balancer prefill_;
  std::vector<std::string> engine_names_; ///< prefill engine index -> instance name
  std::vector<std::optional<cost_model>> engine_costs_; ///< prefill engine index -> its own price
  std::vector<std::vector<int64_t>> placed_;            ///< prefill jobs placed so far, [engine][rank]
  std::unordered_map<uint64_t, prefill_held> prefills_;
  decode_balancer decode_;
  std::vector<decode_slot> decode_slots_;
  std::unordered_map<uint64_t, decode_held> decodes_;
};

} // namespace deepinfer::balancers
