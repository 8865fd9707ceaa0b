#include "engine/rank_engine.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "engine/backends/make_backend.hpp"
#include "engine/ep/ep_rank.hpp"
#include "engine/kv_codec.hpp"
#include "engine/log.hpp"
#include "engine/rank_engine_sequence.hpp"

namespace deepinfer::engine {

namespace {
prefill_progress failure(engine_status st, std::string what) {
  prefill_progress p;
  p.status = st;
  p.error = std::move(what);
  return p;
}
} // namespace

rank_engine::load_result rank_engine::load(const std::string& model_dir, const config& cfg) {
  auto b = make_backend(backend_config{cfg.backend, cfg.threads, cfg.isa, cfg.device_slot});
  if (!b.value)
    return {nullptr, "backend " + std::string{to_string(cfg.backend)} + ": " + b.error};
  return load(model_dir, cfg, std::move(b.value));
}

rank_engine::load_result rank_engine::load(const std::string& model_dir, const config& cfg, std::unique_ptr<backend> b) {
  auto w = model_weights::load_shared(model_dir);
  if (!w.weights)
    return {nullptr, w.error};
  // Memory planning: every tensor is prepared at load (a device keeps its own f32 copy).
  std::size_t floats = 0;
  for (const auto& specs : {tensor_specs(w.weights->config()), draft_tensor_specs(w.weights->config())})
    for (const auto& t : specs) {
      std::size_t n = 1;
      for (auto d : t.shape)
        n *= static_cast<std::size_t>(d);
      floats += n;
    }
  if (auto short_of = b->check_weight_room(floats * sizeof(float)); !short_of.empty())
    return {nullptr, "backend " + b->name() + ": " + short_of};
  return {std::unique_ptr<rank_engine>(new rank_engine(std::move(w.weights), std::move(b), cfg)), {}};
}

rank_engine::rank_engine(std::shared_ptr<const model_weights> w, std::unique_ptr<backend> b, const config& cfg)
    : config_(cfg), weights_(std::move(w)), backend_(std::move(b)),
      forward_(*weights_, *backend_),
      pool_(kv_pool::config{cfg.kv_blocks, weights_->config().kv_floats_per_token(), 128}) {
  // Every position the pool can hold (capped: a huge pool fills its table on demand).
  forward_.prepare_weights();
  if (weights_->config().vision.enabled()) {
    vision_ = std::make_unique<vision_encoder>(*weights_, *backend_);
    vision_->prepare_weights();
  }
  if (cfg.speculative != speculative_mode::off && weights_->draft) {
    draft_ = std::make_unique<draft_head>(*weights_, *backend_);
    draft_->prepare_weights();
  }
  forward_.reserve_positions(std::min<int64_t>(cfg.kv_blocks * 128, int64_t{1} << 18));
  log().info("engine loaded model={} fingerprint={} backend={} kv_blocks={}",
             weights_->config().name, weights_->config().fingerprint, backend_->name(),
             cfg.kv_blocks);
}

rank_engine::~rank_engine() {
  // Hands the member's slots back before the backend that prepared them goes.
  if (ep_ != nullptr)
    ep_->unbind();
}

void rank_engine::join_ep_group(ep_rank& member) {
  if (ep_ != nullptr)
    ep_->unbind();
  else
    forward_.for_each_routed_matrix(
        [&](const float* w, int64_t n, int64_t k) { backend_->release_weight(w, n, k); });
  // A group that goes away first hands the routed experts back to this engine (computed
  // locally again, repacked on first use).
  member.bind(*weights_, *backend_, [this] {
    ep_ = nullptr;
    forward_.set_routed_experts(nullptr);
  });
  forward_.set_routed_experts(&member);
  ep_ = &member;
  log().info("engine joined ep group rank={} ranks={} slots_per_rank={}", member.rank(),
             member.ranks(), member.placement().slots_per_rank());
}

prefill_progress rank_engine::begin_prefill(const prefill_request& req) {
  const auto& c = model();
  const auto n = static_cast<int64_t>(req.tokens.size());
  const int64_t h = req.hit_length;
  // 1. validate
  if (seqs_.count(req.seq))
    return failure(engine_status::invalid_request, "sequence already exists");
  if (n == 0 || h < 0 || h % 128 != 0 || h >= n)
    return failure(engine_status::invalid_request,
                   "hit_length must be a multiple of 128 below the prompt length");
  if (req.blocks_later ? !req.shared_blocks.empty() || !req.hit_blocks.empty()
                       : static_cast<int64_t>(req.shared_blocks.size() + req.hit_blocks.size()) != h / 128)
    return failure(engine_status::invalid_request, "hit blocks do not cover hit_length");
  for (auto t : req.tokens)
    if (t < 0 || t >= c.vocab_size)
      return failure(engine_status::invalid_request, "token id out of range");
  if (req.decoder_from >= n)
    return failure(engine_status::invalid_request, "decoder_from must be below the prompt length");
  if (req.sampling.prompt_logprobs >= 0 && (h > 0 || req.mode != decoder_mode::full))
    return failure(engine_status::invalid_request,
                   "prompt logprobs need a cold prefill (no hit) with the decoder in full mode");
  for (std::size_t i = 0; i < req.images.size(); ++i) {
    const auto& im = req.images[i];
    const int64_t prev_end = i == 0 ? 0 : req.images[i - 1].position + req.images[i - 1].tokens;
    if (im.tokens <= 0 || im.position < prev_end || im.position + im.tokens > n ||
        static_cast<int64_t>(im.values.size()) != im.tokens * c.hidden)
      return failure(engine_status::invalid_request,
                     "image embeddings must be ascending, disjoint, within the prompt and hidden-sized");
  }
  // 2. KV: shared blocks by reference, imported blocks by copy, then room for the rest.
  for (auto b : req.shared_blocks)
    pool_.append_shared(req.seq, b);
  const int64_t fpt = c.kv_floats_per_token();
  for (std::size_t i = 0; i < req.hit_blocks.size(); ++i) {
    auto blocks = static_cast<int64_t>(req.shared_blocks.size() + i + 1);
    auto a = pool_.allocate(req.seq, blocks * 128);
    if (!a) {
      pool_.free(req.seq);
      return failure(engine_status::does_not_fit, "kv pool full");
    }
    auto err = kv_codec::decode_block(req.hit_blocks[i], 128, fpt, c.fingerprint,
                                      pool_.block_data(a->blocks.back()));
    if (!err.empty()) {
      pool_.free(req.seq);
      return failure(engine_status::bad_kv, err);
    }
  }
  if (!pool_.allocate(req.seq, n)) {
    pool_.free(req.seq);
    return failure(engine_status::does_not_fit, "kv pool full");
  }
  auto s = std::make_unique<sequence>();
  s->id = req.seq;
  s->tokens = req.tokens;
  s->prompt_len = n;
  s->mode = req.mode;
  s->windows = sequence_windows::make(c);
  s->sampling = req.sampling;
  s->images = req.images;
  s->sample_seeds = req.sample_seeds;
  if (auto err = attach_constraint(*s); !err.empty()) {
    pool_.free(req.seq);
    return failure(engine_status::invalid_request, err);
  }
  s->prefilling = true;
  s->awaited_blocks = req.blocks_later ? h / 128 : 0;
  int64_t start = 0;
  if (req.mode == decoder_mode::bounded)
    start = req.decoder_from >= 0 ? req.decoder_from : n - c.window;
  else if (req.mode == decoder_mode::exact)
    start = n - c.ring - int64_t{c.window} * c.decoder_layers;
  start = std::max<int64_t>(0, start);
  for (int64_t at : {(n - c.ring) / 128 * 128, (n - 1) / 128 * 128})
    if (at >= 128 && at > h && (s->snapshot_at.empty() || s->snapshot_at.back() < at))
      s->snapshot_at.push_back(at);
  s->kv_len = h;
  // 3. the windows at h: from the snapshot (the decoder's too when it carries them and the
  // mode wants them), or bounded replay of [h-128, h) for the encoder.
  if (h > 0) {
    if (req.snapshot) {
      std::span<const std::byte> bytes{*req.snapshot};
      const auto enc_size = std::min(kv_codec::window_bytes(bytes), bytes.size());
      kv_codec::window_info info;
      auto err = kv_codec::decode_window(bytes.first(enc_size), c.fingerprint,
                                         s->windows.encoder, info);
      if (err.empty() && info.end != h)
        err = "snapshot ends at " + std::to_string(info.end) + ", not at the hit length";
      s->windows.encoder_lo = info.lo;
      if (err.empty() && enc_size < bytes.size() && req.mode != decoder_mode::bounded &&
          start < h) {
        kv_codec::window_info dinfo;
        err = kv_codec::decode_window(bytes.subspan(enc_size), c.fingerprint,
                                      s->windows.decoder, dinfo);
        if (err.empty() && dinfo.end != h)
          err = "snapshot's decoder window does not end at the hit length";
        s->windows.decoder_lo = dinfo.lo;
        s->decoder_restored = true;
      }
      if (!err.empty()) {
        pool_.free(req.seq);
        return failure(engine_status::bad_kv, err);
      }
    } else {
      for (auto& r : s->windows.encoder)
        r.reset(h - c.window);
      s->windows.encoder_lo = h - c.window;
      run_encoder(*s, h - c.window, h, false);
    }
  }
  // Encoder outputs before the hit are not recomputed, so without restored decoder windows the
  // decoder cannot start earlier than the hit (then its windows are approximate).
  s->decoder_start = s->decoder_restored ? h : std::max(start, h);
  s->decoder_exact = req.mode == decoder_mode::full ||
                     (req.mode == decoder_mode::exact && (s->decoder_restored || start >= h));
  s->tail.resize(static_cast<std::size_t>((n - s->decoder_start) * c.hidden));
  log().debug("req={} prefill begin tokens={} hit={} replay={} decoder_start={}", req.seq.value,
              n, h, h > 0 && !req.snapshot, s->decoder_start);
  seqs_.emplace(req.seq, std::move(s));
  return {};
}

int64_t rank_engine::first_encoded_position(const prefill_request& req) const {
  const int64_t h = req.hit_length;
  if (h <= 0)
    return 0;
  // begin_prefill: the snapshot's windows end at h; otherwise [h - window, h) is replayed.
  return req.snapshot ? h : std::max<int64_t>(0, h - model().window);
}

void rank_engine::run_encoder(sequence& s, int64_t begin, int64_t end, bool write_kv) {
  const auto& c = model();
  // A snapshot must see the windows exactly at its point: split the run there.
  for (int64_t at : s.snapshot_at)
    if (at > begin && at < end) {
      run_encoder(s, begin, at, write_kv);
      run_encoder(s, at, end, write_kv);
      return;
    }
  const int64_t n = end - begin;
  if (n <= 0)
    return;
  std::vector<forward_row> rows(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    rows[i] = {s.id, begin + i, &s.windows};
  // Image placeholders take their vision embeddings, in every pass over them (replays too).
  for (const auto& im : s.images)
    for (int64_t p = std::max(begin, im.position); p < std::min(end, im.position + im.tokens); ++p)
      rows[p - begin].embedding = im.values.data() + (p - im.position) * c.hidden;
  std::vector<float> out(static_cast<std::size_t>(n * c.hidden));
  forward_.encoder(rows, s.tokens.data() + begin, out.data());
  if (!write_kv)
    return;
  forward_.global_kv(rows, out.data(), pool_);
  const int64_t from = std::max(begin, s.decoder_start);
  if (from < end)
    std::memcpy(s.tail.data() + (from - s.decoder_start) * c.hidden,
                out.data() + (from - begin) * c.hidden,
                sizeof(float) * static_cast<std::size_t>((end - from) * c.hidden));
  if (std::find(s.snapshot_at.begin(), s.snapshot_at.end(), end) != s.snapshot_at.end())
    // The decoder part, if any, is appended when the decoder passes the same position.
    s.snapshots.push_back({end, encode_snapshot(s, false)});
}

std::vector<std::byte> rank_engine::encode_snapshot(const sequence& s, bool with_decoder) const {
  const auto& fp = model().fingerprint;
  auto out = kv_codec::encode_window(s.windows.encoder, s.windows.encoder_lo, fp);
  if (with_decoder) {
    auto dec = kv_codec::encode_window(s.windows.decoder, s.windows.decoder_lo, fp);
    out.insert(out.end(), dec.begin(), dec.end());
  }
  return out;
}

void rank_engine::run_decoder(sequence& s, int64_t begin, int64_t end) {
  if (end <= begin)
    return;
  const auto& c = model();
  std::vector<forward_row> rows(static_cast<std::size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i)
    rows[static_cast<std::size_t>(i - begin)] = {s.id, i, &s.windows, &s.index_keys};
  // Only the prompt's last row needs the final state (its logits), unless every row's logits are
  // asked for (prompt logprobs); the windows need every row.
  forward_.decoder(rows, s.tail.data() + (begin - s.decoder_start) * c.hidden, pool_,
                   s.sampling.prompt_logprobs < 0);
}

prefill_progress rank_engine::prefill_step(sequence_id id, int64_t max_tokens) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return failure(engine_status::unknown_sequence, "unknown sequence");
  auto& s = *it->second;
  if (!s.prefilling)
    return failure(engine_status::invalid_request, "sequence is not prefilling");
  prefill_progress out;
  out.tokens = std::clamp<int64_t>(max_tokens, 0, s.prompt_len - s.kv_len);
  run_encoder(s, s.kv_len, s.kv_len + out.tokens, true);
  s.kv_len += out.tokens;
  // The decoder reads every position's block KV: it waits for blocks still on their way.
  if (s.kv_len == s.prompt_len && s.awaited_blocks == 0)
    finish_prefill(s, out);
  return out;
}

engine_status rank_engine::import_hit_blocks(sequence_id id,
                                             const std::vector<std::vector<std::byte>>& blocks,
                                             std::string* error) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return engine_status::unknown_sequence;
  auto& s = *it->second;
  if (!s.prefilling || s.awaited_blocks == 0 ||
      static_cast<int64_t>(blocks.size()) != s.awaited_blocks) {
    if (error)
      *error = "no such blocks awaited";
    return engine_status::invalid_request;
  }
  const auto& c = model();
  const auto& table = pool_.table(id);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto err = kv_codec::decode_block(blocks[i], 128, c.kv_floats_per_token(), c.fingerprint,
                                      pool_.block_data(table[i]));
    if (!err.empty()) {
      if (error)
        *error = err;
      return engine_status::bad_kv;
    }
  }
  s.awaited_blocks = 0;
  return engine_status::ok;
}

bool rank_engine::awaiting_blocks(sequence_id id) const {
  auto it = seqs_.find(id);
  return it != seqs_.end() && it->second->awaited_blocks > 0;
}

void rank_engine::finish_prefill(sequence& s, prefill_progress& out) {
  const auto& c = model();
  const int64_t n = s.prompt_len - s.decoder_start;
  if (!s.decoder_restored) {
    for (auto& r : s.windows.decoder)
      r.reset(s.decoder_start);
    s.windows.decoder_lo = s.decoder_start;
  }
  // With exact decoder windows the snapshots also carry them: split the run at each point
  // (splitting changes no bit: every row's result is independent of its batch).
  int64_t done = s.decoder_start;
  for (auto& snap : s.snapshots) {
    if (!s.decoder_exact || snap.end <= s.decoder_start)
      continue;
    run_decoder(s, done, snap.end);
    done = snap.end;
    auto dec = kv_codec::encode_window(s.windows.decoder, s.windows.decoder_lo, c.fingerprint);
    snap.bytes.insert(snap.bytes.end(), dec.begin(), dec.end());
  }
  run_decoder(s, done, s.prompt_len);
  if (s.sampling.prompt_logprobs >= 0)
    score_prompt(s, out);
  out.logits.resize(static_cast<std::size_t>(c.vocab_size));
  forward_.logits(s.tail.data() + (n - 1) * c.hidden, 1, out.logits.data());
  s.prefilling = false;
  out.done = true;
  // Before the sequence's own draw changes the logits (penalties, mask) and appends its token.
  for (auto seed : s.sample_seeds)
    out.samples.push_back(draw_first(s, seed, out.logits));
  sample_and_append(s, out.logits.data(), out.first);
  if (draft_) {
    sequence* one[] = {&s};
    propose(one, s.tail.data() + (n - 1) * c.hidden);
  }
  s.tail = {};
  log().debug("req={} prefill done tokens={} first={}", s.id.value, s.prompt_len, out.first.id);
}

prefill_progress rank_engine::prefill(const prefill_request& req) {
  auto begun = begin_prefill(req);
  if (begun.status != engine_status::ok)
    return begun;
  return prefill_step(req.seq, static_cast<int64_t>(req.tokens.size()));
}

float* rank_engine::logits_scratch(int64_t floats) {
  if (logits_scratch_.size() < static_cast<std::size_t>(floats))
    logits_scratch_.resize(static_cast<std::size_t>(floats));
  return logits_scratch_.data();
}

} // namespace deepinfer::engine
