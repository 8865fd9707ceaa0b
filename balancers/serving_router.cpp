#include "balancers/serving_router.hpp"

#include <algorithm>

namespace deepinfer::balancers {

namespace {

prefill_balancer::config no_engines(prefill_balancer::config c) {
  c.engines = 0;
  c.ranks_per_engine = 0;
  return c;
}

} // namespace

serving_router::serving_router(const config& cfg)
    : cfg_(cfg), prefill_(no_engines(cfg.prefill)), decode_(cfg.decode) {
  // nop
}

// -- membership ----------------------------------------------------------------------------------

void serving_router::set_prefill_instances(std::span<const instance_shape> live) {
  std::vector<int> ranks(engine_names_.size(), 0);
  for (const auto& inst : live) {
    auto it = std::find(engine_names_.begin(), engine_names_.end(), inst.name);
    if (it == engine_names_.end()) {
      engine_names_.push_back(inst.name);
      ranks.push_back(0);
      it = engine_names_.end() - 1;
    }
    const auto e = static_cast<std::size_t>(it - engine_names_.begin());
    ranks[e] = static_cast<int>(inst.ranks);
    if (engine_costs_.size() <= e)
      engine_costs_.resize(e + 1);
    engine_costs_[e] = inst.prefill_cost;
  }
  prefill_.reshape(ranks);
  prefill_.set_engine_costs(engine_costs_);
  // A prefill held by a rank that is gone will never report; forget its quota (the request
  // actor sees the rank die and submits again).
  for (auto& [id, h] : prefills_)
    if (h.engine >= 0 && h.rank >= prefill_.ranks_of(h.engine))
      h.quota_s = h.released_s = 0.0;
}

void serving_router::set_decode_instances(std::span<const instance_shape> live) {
  for (auto& s : decode_slots_)
    s.live = false;
  for (const auto& inst : live)
    for (uint32_t r = 0; r < inst.ranks; ++r) {
      rank_ref where{inst.name, r};
      auto i = decode_slot_of(where);
      if (i == decode_slots_.size()) {
        decode_slots_.push_back({where, false, {}});
      }
      auto& s = decode_slots_[i];
      s.live = true;
      s.state.kv_capacity = inst.kv_tokens_per_rank;
    }
  for (auto it = decodes_.begin(); it != decodes_.end();) {
    if (!decode_slots_[it->second.slot].live) {
      release_decode(it->second);
      it = decodes_.erase(it);
    } else {
      ++it;
    }
  }
}

// -- prefill -------------------------------------------------------------------------------------

void serving_router::submit_prefill(uint64_t id, int64_t input_len, double quota_s, int64_t cached) {
  if (!prefills_.emplace(id, prefill_held{-1, 0, quota_s}).second)
    return;
  const bool known = cached >= 0 && cached <= input_len;
  prefill_.submit({id, input_len, quota_s, known ? input_len - cached : -1, known ? cached : 0});
}

std::vector<serving_router::prefill_placement> serving_router::dispatch_prefills() {
  std::vector<prefill_placement> out;
  for (const auto& a : prefill_.dispatch()) {
    auto& h = prefills_[a.id];
    h.engine = a.engine;
    h.rank = a.rank;
    h.quota_s = a.quota; // its price on that instance
    h.reserve = a.reserve;
    if (placed_.size() <= static_cast<std::size_t>(a.engine))
      placed_.resize(static_cast<std::size_t>(a.engine) + 1);
    auto& ranks = placed_[static_cast<std::size_t>(a.engine)];
    if (ranks.size() <= static_cast<std::size_t>(a.rank))
      ranks.resize(static_cast<std::size_t>(a.rank) + 1, 0);
    ++ranks[static_cast<std::size_t>(a.rank)];
    out.push_back({a.id, {engine_names_[static_cast<std::size_t>(a.engine)], static_cast<uint32_t>(a.rank)}});
  }
  return out;
}

void serving_router::release_prefill(uint64_t id, double quota_s) {
  auto it = prefills_.find(id);
  if (it == prefills_.end() || it->second.engine < 0)
    return;
  auto& h = it->second;
  const double give = std::min(std::max(quota_s, 0.0), h.quota_s - h.released_s);
  prefill_.complete(h.engine, h.rank, give, h.reserve);
  h.released_s += give;
}

void serving_router::finish_prefill(uint64_t id) {
  auto it = prefills_.find(id);
  if (it == prefills_.end())
    return;
  if (it->second.engine < 0)
    prefill_.withdraw(id);
  else
    prefill_.complete(it->second.engine, it->second.rank, it->second.quota_s - it->second.released_s,
                      it->second.reserve);
  prefills_.erase(it);
}

void serving_router::new_round() {
  prefill_.new_round();
}

std::size_t serving_router::queued_prefills() const {
  std::size_t n = 0;
  for (int b = 0; b < prefill_balancer::bucket_count; ++b)
    n += prefill_.queued(b);
  return n;
}

// -- decode --------------------------------------------------------------------------------------

std::size_t serving_router::decode_slot_of(const rank_ref& where) const {
  for (std::size_t i = 0; i < decode_slots_.size(); ++i)
    if (decode_slots_[i].where == where)
      return i;
  return decode_slots_.size();
}

void serving_router::release_decode(const decode_held& h) {
  auto& st = decode_slots_[h.slot].state;
  st.requests = std::max<int64_t>(0, st.requests - 1);
  st.kv_tokens = std::max<int64_t>(0, st.kv_tokens - h.kv_tokens);
  st.kv_reserved = std::max<int64_t>(0, st.kv_reserved - h.reserved);
}

std::optional<serving_router::rank_ref> serving_router::place_decode(uint64_t id, int64_t kv_tokens,
                                                                    int64_t reserve_tokens) {
  finish_decode(id);
  reserve_tokens = std::max(reserve_tokens, kv_tokens);
  std::vector<std::size_t> index;
  std::vector<decode_balancer::rank_state> states;
  for (std::size_t i = 0; i < decode_slots_.size(); ++i)
    if (decode_slots_[i].live) {
      index.push_back(i);
      states.push_back(decode_slots_[i].state);
    }
  const auto choice = decode_.choose(states, kv_tokens, reserve_tokens);
  if (!choice)
    return std::nullopt;
  const auto slot = index[static_cast<std::size_t>(*choice)];
  auto& st = decode_slots_[slot].state;
  ++st.requests;
  st.kv_tokens += kv_tokens;
  st.kv_reserved += reserve_tokens;
  decodes_[id] = {slot, kv_tokens, reserve_tokens};
  return decode_slots_[slot].where;
}

bool serving_router::adopt_decode(uint64_t id, const rank_ref& where, int64_t kv_tokens, int64_t reserve_tokens) {
  const auto slot = decode_slot_of(where);
  if (slot == decode_slots_.size() || !decode_slots_[slot].live)
    return false;
  finish_decode(id);
  reserve_tokens = std::max(reserve_tokens, kv_tokens);
  auto& st = decode_slots_[slot].state;
  ++st.requests;
  st.kv_tokens += kv_tokens;
  st.kv_reserved += reserve_tokens;
  decodes_[id] = {slot, kv_tokens, reserve_tokens};
  return true;
}

void serving_router::grow_decode(uint64_t id, int64_t kv_tokens) {
  auto it = decodes_.find(id);
  if (it == decodes_.end())
    return;
  auto& st = decode_slots_[it->second.slot].state;
  st.kv_tokens = std::max<int64_t>(0, st.kv_tokens + kv_tokens - it->second.kv_tokens);
  it->second.kv_tokens = kv_tokens;
  if (kv_tokens > it->second.reserved) { // past its reservation (none given): reserve what it holds
    st.kv_reserved += kv_tokens - it->second.reserved;
    it->second.reserved = kv_tokens;
  }
}

void serving_router::finish_decode(uint64_t id) {
  auto it = decodes_.find(id);
  if (it == decodes_.end())
    return;
  release_decode(it->second);
  decodes_.erase(it);
}

// -- views ---------------------------------------------------------------------------------------

std::vector<serving_router::rank_load> serving_router::prefill_loads() const {
  std::vector<rank_load> out;
  for (int e = 0; e < prefill_.engines(); ++e)
    for (int r = 0; r < prefill_.ranks_of(e); ++r) {
      rank_load l;
      l.where = {engine_names_[static_cast<std::size_t>(e)], static_cast<uint32_t>(r)};
      l.quota_s = prefill_.rank_load(e, r);
      if (static_cast<std::size_t>(e) < placed_.size() && static_cast<std::size_t>(r) < placed_[static_cast<std::size_t>(e)].size())
        l.placed = placed_[static_cast<std::size_t>(e)][static_cast<std::size_t>(r)];
      for (const auto& [id, h] : prefills_)
        l.requests += h.engine == e && h.rank == r ? 1 : 0;
      out.push_back(std::move(l));
    }
  return out;
}

std::vector<serving_router::rank_load> serving_router::decode_loads() const {
  std::vector<rank_load> out;
  for (const auto& s : decode_slots_)
    if (s.live)
      out.push_back({s.where, s.state.requests, 0.0, s.state.kv_tokens,
                     s.state.kv_capacity > 0 ? s.state.kv_capacity : cfg_.decode.max_kv_tokens, s.state.kv_reserved});
  return out;
}

} // namespace deepinfer::balancers
