#include "engine/decode_loop.hpp"

#include "recipe/base/thread_name.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace deepinfer::engine {

std::vector<verify_output> run_decode_step(rank_engine& engine, spec_planner* planner,
                                           std::span<const sequence_id> seqs) {
  std::vector<draft_proposal> props(seqs.size());
  bool predicted = false;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    props[i] = engine.proposal(seqs[i]);
    predicted = predicted || (props[i].predicted && props[i].count > 0);
  }
  if (planner == nullptr && predicted) {
    // No head, but requests with a prediction: they verify all its drafts, the rest decode.
    std::vector<verify_request> reqs(seqs.size());
    for (std::size_t i = 0; i < seqs.size(); ++i)
      reqs[i] = {seqs[i], props[i].predicted ? props[i].count : 0};
    return engine.verify_step(reqs);
  }
  if (planner == nullptr) {
    auto outs = engine.decode_step(seqs);
    std::vector<verify_output> v(outs.size());
    for (std::size_t i = 0; i < outs.size(); ++i) {
      v[i].seq = outs[i].seq;
      v[i].status = outs[i].status;
      v[i].finished = outs[i].finished;
      if (outs[i].status == engine_status::ok)
        v[i].tokens.push_back(std::move(outs[i].token));
    }
    return v;
  }
  // The planner prices the head's proposals only: a prediction is verified whole (the client
  // asked for it), and its outcomes would mislead the head's calibration.
  std::vector<uint64_t> ids(seqs.size());
  for (std::size_t i = 0; i < seqs.size(); ++i)
    ids[i] = seqs[i].value;
  std::vector<draft_proposal> head_props;
  if (predicted) {
    head_props = props;
    for (auto& p : head_props)
      if (p.predicted)
        p = {};
  }
  const auto& priced = predicted ? head_props : props;
  const auto lengths = planner->plan(priced, ids);
  std::vector<verify_request> reqs(seqs.size());
  int64_t rows = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    reqs[i] = {seqs[i], props[i].predicted ? props[i].count : lengths[i]};
    rows += 1 + reqs[i].drafts;
  }
  // The head runs after this step unless paused: a step without it is cheaper than the profiled
  // ones, so only steps with it correct the profile.
  const bool proposing = planner->wants_proposals();
  engine.pause_proposing(!proposing);
  const auto t0 = std::chrono::steady_clock::now();
  auto outs = engine.verify_step(reqs);
  planner->observe(rows, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                   proposing ? static_cast<int64_t>(seqs.size()) : 0);
  std::vector<int32_t> emitted;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    emitted.clear();
    for (const auto& t : outs[i].tokens)
      emitted.push_back(t.id);
    // A sequence the step could not extend (unknown, out of KV) ends its comparisons.
    planner->observe_emitted(seqs[i].value, priced[i], emitted,
                             outs[i].finished || outs[i].status != engine_status::ok);
  }
  return outs;
}

void idle_meter::step(clock::time_point start, clock::time_point end, bool goes_on) {
  const double idle = last_end_ ? std::chrono::duration<double>(start - *last_end_).count() : 0.0;
  idle_ = 0.95 * idle_ + idle;
  busy_ = 0.95 * busy_ + std::chrono::duration<double>(end - start).count();
  last_end_ = goes_on ? std::optional{end} : std::nullopt;
}

double idle_meter::fraction() const {
  const double all = idle_ + busy_;
  return all > 0 ? idle_ / all : 0.0;
}

decode_loop::decode_loop(rank_engine& engine, std::unique_ptr<spec_planner> planner, hooks h, options opt)
  : engine_(engine), planner_(std::move(planner)), hooks_(std::move(h)), max_ahead_(opt.max_ahead < 1 ? 1 : opt.max_ahead),
    export_filled_(opt.export_filled_blocks), release_finished_(opt.release_finished) {
  pool_used_ = engine_.pool().geometry().blocks - engine_.pool().free_blocks();
  thread_ = std::thread([this] { run(); });
}

decode_loop::~decode_loop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void decode_loop::acquire() {
  std::unique_lock lock(mutex_);
  ++wanted_;
  changed_.wait(lock, [&] { return !stepping_ && !held_; });
  --wanted_;
  held_ = true;
}

void decode_loop::release() {
  {
    std::lock_guard lock(mutex_);
    held_ = false;
  }
  changed_.notify_all();
}

void decode_loop::set_batch(std::vector<member> batch) {
  std::lock_guard lock(mutex_);
  batch_ = std::move(batch);
  std::erase_if(stored_, [&](const auto& e) {
    return std::none_of(batch_.begin(), batch_.end(), [&](const member& m) { return m.seq == e.first; });
  });
}

void decode_loop::note_stored(sequence_id seq, int64_t stored) {
  std::lock_guard lock(mutex_);
  if (std::any_of(batch_.begin(), batch_.end(), [&](const member& m) { return m.seq == seq; }))
    stored_[seq] = stored;
}

std::vector<decode_loop::step_result> decode_loop::take() {
  std::vector<step_result> out;
  {
    std::lock_guard lock(mutex_);
    out.swap(results_);
    notified_ = false;
  }
  changed_.notify_all(); // a loop held back by max_ahead may go on
  return out;
}

void decode_loop::wake(int64_t step) {
  {
    std::lock_guard lock(mutex_);
    wake_ = std::max(wake_, step);
  }
  changed_.notify_all();
}

double decode_loop::idle_fraction() const {
  std::lock_guard lock(mutex_);
  return idle_.fraction();
}

uint64_t decode_loop::steps() const {
  std::lock_guard lock(mutex_);
  return steps_;
}

int64_t decode_loop::pool_blocks_used() const {
  std::lock_guard lock(mutex_);
  return pool_used_;
}

uint64_t decode_loop::overlapped_steps() const {
  std::lock_guard lock(mutex_);
  return overlapped_;
}

void decode_loop::export_after_step(std::span<const sequence_id> seqs, const std::vector<int64_t>& full_before,
                                    step_result& r) {
  r.filled.resize(r.outs.size());
  for (std::size_t i = 0; i < r.outs.size() && i < seqs.size(); ++i) {
    if (r.outs[i].status != engine_status::ok)
      continue;
    const int64_t full = export_filled_ ? engine_.computed(seqs[i]).value_or(0) / 128 : full_before[i];
    const bool release = release_finished_ && r.outs[i].finished;
    if (full <= full_before[i] && !release)
      continue;
    auto& f = r.filled[i];
    f.first = full_before[i];
    if (release) {
      // From the first block the owner has not stored: once freed, nothing else can export it.
      std::lock_guard lock(mutex_);
      if (auto it = stored_.find(seqs[i]); it != stored_.end()) {
        f.first = std::min(f.first, it->second);
        stored_.erase(it);
      }
    }
    for (int64_t b = f.first; b < full; ++b)
      if (auto bytes = engine_.export_block(seqs[i], b))
        f.blocks.push_back(std::move(*bytes));
      else
        break;
    f.tokens = engine_.tokens(seqs[i]);
    if (!release)
      continue;
    f.snapshot_end = engine_.snapshot_end(seqs[i]);
    if (f.snapshot_end)
      f.snapshot = engine_.export_snapshot(seqs[i]).value_or(std::vector<std::byte>{});
    engine_.free(seqs[i]);
    f.released = true;
  }
}

void decode_loop::publish(std::unique_lock<std::mutex>& lock, step_result r) {
  results_.push_back(std::move(r));
  const bool tell = !std::exchange(notified_, true);
  lock.unlock();
  changed_.notify_all(); // an owner waiting in acquire
  if (tell && hooks_.ready)
    hooks_.ready();
  lock.lock();
}

void decode_loop::run() {
  name_this_thread("decode.step");
  using clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  for (;;) {
    const auto can_step = [&] { return !batch_.empty() && static_cast<int>(results_.size()) < max_ahead_; };
    changed_.wait(lock, [&] { return stop_ || (!failed_ && !held_ && wanted_ == 0 && (can_step() || wake_ > 0)); });
    if (stop_)
      return;
    stepping_ = true;
    const int64_t wake = std::exchange(wake_, 0);
    if (!can_step()) {
      // The group started a step this rank has nothing to run in: it takes part without forwards.
      lock.unlock();
      const bool ok = !hooks_.end_step || hooks_.end_step(wake);
      lock.lock();
      stepping_ = false;
      if (ok) {
        changed_.notify_all();
        continue;
      }
      failed_ = true;
      step_result r;
      r.failed = true;
      publish(lock, std::move(r));
      continue;
    }
    const bool ahead = !results_.empty();
    step_result r;
    std::vector<sequence_id> seqs;
    for (const auto& m : batch_) {
      r.ids.push_back(m.id);
      seqs.push_back(m.seq);
    }
    lock.unlock();

    const auto start = clock::now();
    // Full blocks before the step (KV below the last token), to see which the step fills.
    const bool exports = export_filled_ || release_finished_;
    std::vector<int64_t> full_before;
    if (exports)
      for (const auto& seq : seqs)
        full_before.push_back(engine_.computed(seq).value_or(0) / 128);
    r.outs = run_decode_step(engine_, planner_.get(), seqs);
    if (exports)
      export_after_step(seqs, full_before, r);
    r.failed = hooks_.end_step && !hooks_.end_step(wake);
    const int64_t used = engine_.pool().geometry().blocks - engine_.pool().free_blocks();
    const auto end = clock::now();

    lock.lock();
    stepping_ = false;
    ++steps_;
    pool_used_ = used;
    overlapped_ += ahead ? 1 : 0;
    // What the step ended (finished, unknown, out of KV) leaves the batch: the owner hears of it
    // from the results and frees it.
    std::vector<member> next;
    for (std::size_t i = 0; i < r.outs.size() && i < batch_.size(); ++i)
      if (r.outs[i].status == engine_status::ok && !r.outs[i].finished)
        next.push_back(batch_[i]);
    batch_ = std::move(next);
    failed_ = r.failed;
    idle_.step(start, end, !batch_.empty());
    publish(lock, std::move(r));
  }
}

} // namespace deepinfer::engine
