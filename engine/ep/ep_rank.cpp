#include "engine/ep/ep_rank.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "engine/backends/backend.hpp"
#include "engine/ep/expert_replacement.hpp"
#include "engine/log.hpp"
#include "engine/model/weights.hpp"

namespace deepinfer::engine {

namespace {

// Header of a dispatch buffer: [done, layer, rows, then one slot per row].
constexpr std::size_t head_done = 0, head_layer = 1, head_rows = 2, head_size = 3;

const moe_weights& layer_weights(const model_weights& w, int layer) {
  const auto e = static_cast<int>(w.encoder.size());
  return layer < e ? w.encoder[static_cast<std::size_t>(layer)].moe
                   : w.decoder[static_cast<std::size_t>(layer - e)].moe;
}

} // namespace

ep_rank::ep_rank(const model_config& model, const ep_settings& settings, expert_placement placement,
                 ep_transport& transport, replica_mover& mover, ep_step_signal* signal)
    : model_(model), settings_(settings), placement_(std::move(placement)), transport_(transport),
      mover_(mover), signal_(signal),
      slots_({placement_.layers(), placement_.slots_per_rank(), model.hidden, model.expert_ffn}),
      window_(placement_.layers(), placement_.experts(), transport.ranks(), settings.window),
      layers_(placement_.layers()), experts_(placement_.experts()), hidden_(model.hidden),
      ffn_(model.expert_ffn) {
  const auto ranks = static_cast<std::size_t>(transport.ranks());
  send_.resize(ranks);
  reply_.resize(ranks);
  by_slot_.resize(static_cast<std::size_t>(layers_ * placement_.slots_per_rank()));
  next_replica_.assign(static_cast<std::size_t>(layers_ * experts_), 0);
  routed_step_.assign(static_cast<std::size_t>(layers_ * experts_), 0);
  routed_total_.assign(static_cast<std::size_t>(layers_ * experts_), 0);
  served_step_.assign(static_cast<std::size_t>(layers_), 0);
}

ep_rank::~ep_rank() { unbind(); }

void ep_rank::bind(const model_weights& w, backend& b, std::function<void()> on_unbind) {
  unbind();
  for (int l = 0; l < layers_; ++l)
    for (int s = 0; s < placement_.slots_per_rank(); ++s)
      slots_.load(l, s, layer_weights(w, l), placement_.expert(l, {rank(), s}));
  slots_.prepare(b);
  backend_ = &b;
  on_unbind_ = std::move(on_unbind);
}

void ep_rank::unbind() {
  if (backend_ == nullptr)
    return;
  slots_.release(*backend_);
  backend_ = nullptr;
  if (auto f = std::exchange(on_unbind_, {}))
    f();
}

bool ep_rank::timed_all_to_all(const std::vector<ep_buffer>& send, std::vector<ep_buffer>& recv) {
  if (failed_.load())
    return false;
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = transport_.all_to_all(send, recv);
  exchange_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) {
    failed_.store(true);
    log().warn("ep rank={} the group failed; leaving the step", rank());
  }
  return ok;
}

void ep_rank::begin_step() {
  if (in_step_)
    return;
  in_step_ = true;
  if (signal_ != nullptr)
    signal_->started(steps_.load() + 1, rank());
}

void ep_rank::run(int layer, const float* xn, int64_t n, std::span<const expert_route> routes,
                  int top, float* out) {
  begin_step();
  if (rounds_over_) {
    if (failed_.load())
      return; // the rest of a forward the failure cut short: garbage, never used
    // The others have left the step's rounds: these rows would wait for a round that never
    // comes. The owner must end the step after serve_round said it was over.
    log().critical("ep rank={} ran a forward after its step's rounds were over", rank());
    std::abort();
  }
  forwarded_ = true;
  round(layer, xn, n, routes, top, out, false);
}

void ep_rank::serve_waiting() {
  if (rounds_over_ || failed_.load() || !transport_.peers_wait_with_rows())
    return;
  begin_step();
  ++served_early_;
  round(-1, nullptr, 0, {}, 0, nullptr, false);
}

bool ep_rank::serve_round() {
  begin_step();
  return rounds_over_ || round(-1, nullptr, 0, {}, 0, nullptr, true);
}

bool ep_rank::round(int layer, const float* xn, int64_t n, std::span<const expert_route> routes,
                    int top, float* out, bool done) {
  const auto h = static_cast<std::size_t>(hidden_);
  // 1. dispatch: each (row, route) to one slot holding its expert, round robin over replicas.
  for (auto& b : send_) {
    b.header.assign({done ? 1 : 0, layer, 0});
    b.rows.clear();
  }
  where_.resize(static_cast<std::size_t>(n * top));
  for (int64_t r = 0; r < n; ++r)
    for (int t = 0; t < top; ++t) {
      const auto& rt = routes[static_cast<std::size_t>(r * top + t)];
      const auto key = static_cast<std::size_t>(layer * experts_ + rt.expert);
      const auto reps = placement_.replicas(layer, rt.expert);
      const auto pick = reps[(next_replica_[key]++ + static_cast<uint64_t>(rank())) % reps.size()];
      auto& b = send_[static_cast<std::size_t>(pick.rank)];
      where_[static_cast<std::size_t>(r * top + t)] = {pick.rank, b.header[head_rows]++};
      b.header.push_back(pick.slot);
      b.rows.insert(b.rows.end(), xn + r * hidden_, xn + (r + 1) * hidden_);
      ++routed_step_[key];
      ++routed_total_[key];
    }
  // A failed group ends every loop at once (its outputs are garbage and will not be used).
  if (!timed_all_to_all(send_, recv_))
    return rounds_over_ = true;
  // Every rank sees the same flags: all done means no rows anywhere and the step's rounds end.
  bool all_done = true;
  for (const auto& b : recv_)
    all_done = all_done && b.header[head_done] == 1;
  if (all_done)
    return rounds_over_ = true;
  // 2. compute what was sent here, 3. send it back and combine in ascending expert order (the
  // order of each row's routes), one axpy per route as the local path does.
  compute_received();
  if (!timed_all_to_all(reply_, result_))
    return rounds_over_ = true;
  if (n == 0)
    return false;
  const auto& k = backend_->kernels();
  for (int64_t r = 0; r < n; ++r)
    for (int t = 0; t < top; ++t) {
      const auto [d, i] = where_[static_cast<std::size_t>(r * top + t)];
      k.axpy(out + r * hidden_, result_[static_cast<std::size_t>(d)].rows.data() + static_cast<std::size_t>(i) * h,
             routes[static_cast<std::size_t>(r * top + t)].weight, hidden_);
    }
  return false;
}

void ep_rank::compute_received() {
  const auto h = static_cast<std::size_t>(hidden_);
  const int spr = placement_.slots_per_rank();
  used_slots_.clear();
  for (std::size_t s = 0; s < recv_.size(); ++s) {
    const auto& b = recv_[s];
    const int count = b.header[head_rows];
    reply_[s].header.clear();
    reply_[s].rows.resize(static_cast<std::size_t>(count) * h);
    for (int i = 0; i < count; ++i) {
      const auto key = static_cast<std::size_t>(b.header[head_layer] * spr + b.header[head_size + static_cast<std::size_t>(i)]);
      if (by_slot_[key].empty())
        used_slots_.push_back(static_cast<int32_t>(key));
      by_slot_[key].emplace_back(static_cast<int32_t>(s), i);
    }
  }
  if (used_slots_.empty())
    return;
  if (backend_ == nullptr) {
    log().critical("ep rank={} got rows to compute but is bound to no engine", rank());
    std::abort();
  }
  auto& b = *backend_;
  std::sort(used_slots_.begin(), used_slots_.end());
  // Every used slot's rows side by side, in slot order, through the backend at once (one round
  // trip on a device). An expert's product for each row is the same whatever the other rows
  // (backend contract).
  std::size_t total = 0;
  for (const int32_t key : used_slots_)
    total += by_slot_[static_cast<std::size_t>(key)].size();
  xe_.resize(total * h);
  g_.resize(total * static_cast<std::size_t>(ffn_));
  u_.resize(total * static_cast<std::size_t>(ffn_));
  o_.resize(total * h);
  mlps_.clear();
  std::size_t at = 0;
  for (const int32_t key : used_slots_) {
    const auto& rows = by_slot_[static_cast<std::size_t>(key)];
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto [s, j] = rows[i];
      std::memcpy(xe_.data() + (at + i) * h, recv_[static_cast<std::size_t>(s)].rows.data() + static_cast<std::size_t>(j) * h,
                  sizeof(float) * h);
    }
    const auto v = slots_.at(key / spr, key % spr);
    mlps_.push_back({v.w1, v.w3, v.w2, static_cast<int64_t>(rows.size())});
    at += rows.size();
  }
  b.gated_mlps(xe_.data(), hidden_, ffn_, mlps_, o_.data(), g_.data(), u_.data());
  at = 0;
  for (const int32_t key : used_slots_) {
    auto& rows = by_slot_[static_cast<std::size_t>(key)];
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto [s, j] = rows[i];
      std::memcpy(reply_[static_cast<std::size_t>(s)].rows.data() + static_cast<std::size_t>(j) * h,
                  o_.data() + (at + i) * h, sizeof(float) * h);
    }
    served_step_[static_cast<std::size_t>(key / spr)] += static_cast<int64_t>(rows.size());
    at += rows.size();
    rows.clear();
  }
}

void ep_rank::set_wake(std::function<void(int64_t step)> wake) {
  if (signal_ == nullptr)
    return;
  signal_->set_wake(rank(), wake);
  // Seq-cst on started_ and the signal's mutex: a rank starting a step either sees this wake or
  // its start is seen here.
  if (const int64_t s = signal_->started_step(); wake && !in_step_ && s > steps())
    wake(s);
}

ep_step_stats ep_rank::end_step() {
  begin_step();
  // 1. serve the others' rounds until every rank has ended its step (serve_round may have
  // seen the last one already)
  while (!rounds_over_ && !round(-1, nullptr, 0, {}, 0, nullptr, true)) {
  }
  rounds_over_ = false;
  forwarded_ = false;
  // 2. every rank's counts to every rank: [flags, routed (layers x experts), served (layers)]
  ep_buffer mine;
  mine.header.reserve(1 + routed_step_.size() + served_step_.size());
  mine.header.push_back(replace_requested_.exchange(false) ? 1 : 0);
  for (auto v : routed_step_)
    mine.header.push_back(static_cast<int32_t>(v));
  for (auto v : served_step_)
    mine.header.push_back(static_cast<int32_t>(v));
  mine.rows.push_back(static_cast<float>(exchange_seconds_));
  const double wait_now = transport_.arrival_wait_seconds();
  mine.rows.push_back(static_cast<float>(wait_now - wait_mark_));
  std::fill(send_.begin(), send_.end(), mine);
  ep_step_stats st;
  if (!timed_all_to_all(send_, recv_)) {
    st.failed = true;
    in_step_ = false;
    return st;
  }
  std::fill(routed_step_.begin(), routed_step_.end(), 0);
  std::fill(served_step_.begin(), served_step_.end(), 0);
  exchange_seconds_ = 0.0;
  wait_mark_ = transport_.arrival_wait_seconds();
  // 3. the same decisions on every rank from the same counts
  const int ranks_n = ranks();
  st.step = steps_.load() + 1;
  std::vector<int64_t> routed(static_cast<std::size_t>(layers_ * experts_), 0);
  std::vector<int64_t> served(static_cast<std::size_t>(layers_ * ranks_n), 0);
  st.rank_rows.assign(static_cast<std::size_t>(ranks_n), 0);
  st.min_exchange_seconds = 1e300;
  bool replace = false;
  for (int r = 0; r < ranks_n; ++r) {
    const auto& hd = recv_[static_cast<std::size_t>(r)].header;
    replace = replace || hd[0] != 0;
    for (std::size_t i = 0; i < routed.size(); ++i)
      routed[i] += hd[1 + i];
    for (int l = 0; l < layers_; ++l) {
      const int64_t v = hd[1 + routed.size() + static_cast<std::size_t>(l)];
      served[static_cast<std::size_t>(l * ranks_n + r)] = v;
      st.rank_rows[static_cast<std::size_t>(r)] += v;
    }
    const double x = recv_[static_cast<std::size_t>(r)].rows[0];
    st.exchange_seconds += x / ranks_n;
    st.arrival_wait_seconds += recv_[static_cast<std::size_t>(r)].rows[1] / ranks_n;
    st.min_exchange_seconds = std::min(st.min_exchange_seconds, x);
  }
  window_.add_step(routed, served);
  st.moe_lb = window_.moe_lb();
  replace = replace || (settings_.interval > 0 && st.step % settings_.interval == 0);
  if (replace) {
    auto next = place_experts(layers_, experts_, ranks_n, settings_.redundant_per_rank,
                              expert_loads(), &placement_);
    st.moves = apply(next);
    if (failed_.load()) {
      st.failed = true;
      in_step_ = false;
      return st;
    }
    st.replaced = true;
    ++replacements_;
    moved_slots_ += st.moves;
    if (rank() == 0)
      log().info("ep re-placed experts step={} ranks={} moe_lb={:.4f} moved_slots={}", st.step,
                 ranks_n, st.moe_lb, st.moves);
  }
  in_step_ = false;
  steps_.store(st.step);
  return st;
}

std::vector<std::vector<double>> ep_rank::expert_loads() const {
  std::vector<std::vector<double>> out;
  for (int l = 0; l < layers_; ++l)
    out.push_back(window_.expert_load(l));
  return out;
}

int ep_rank::apply(const expert_placement& next) {
  // 1. the plan, identical on every rank: each slot whose expert changes gets it from a slot
  // holding it now (on its own rank when there is one), tagged by its place in the plan.
  std::vector<replica_send> sends;
  std::vector<replica_receive> receives;
  struct arriving {
    int layer, slot;
    std::vector<float> buffer;
  };
  std::vector<arriving> in;
  int tag = 0;
  const int spr = placement_.slots_per_rank();
  for (int l = 0; l < layers_; ++l)
    for (int r = 0; r < ranks(); ++r)
      for (int s = 0; s < spr; ++s) {
        const int e = next.expert(l, {r, s});
        if (e == placement_.expert(l, {r, s}))
          continue;
        const auto reps = placement_.replicas(l, e);
        auto src = reps.front();
        for (const auto ref : reps)
          if (ref.rank == r) {
            src = ref;
            break;
          }
        if (src.rank == rank())
          sends.push_back({r, tag, slots_.data(l, src.slot)});
        if (r == rank()) {
          in.push_back({l, s, std::vector<float>(slots_.floats_per_slot())});
          receives.push_back({src.rank, tag, in.back().buffer.data()});
        }
        ++tag;
      }
  // `receives` points into `in`'s buffers: `in` was fully built above (no reallocation after).
  for (std::size_t i = 0; i < in.size(); ++i)
    receives[i].weights = in[i].buffer.data();
  // 2. the moves (collective: every sender's buffer stays put until everyone has copied)
  if (!mover_.move(sends, receives, slots_.floats_per_slot())) {
    failed_.store(true);
    return 0;
  }
  // 3. the new buffers in, the old ones out of the backend
  const expert_slots::shape& shape = slots_.geometry();
  for (auto& a : in) {
    auto old = slots_.replace(a.layer, a.slot, std::move(a.buffer));
    if (backend_ != nullptr) {
      expert_slots::prepare(*backend_, slots_.at(a.layer, a.slot), shape);
      const int64_t fh = ffn_ * hidden_;
      expert_slots::release(*backend_, {old.data(), old.data() + fh, old.data() + 2 * fh}, shape);
    }
  }
  placement_ = next;
  return tag;
}

} // namespace deepinfer::engine
