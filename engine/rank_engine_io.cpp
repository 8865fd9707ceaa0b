// rank_engine: batched decode, KV export/import and sequence lifetime.
#include <array>
#include <cstring>

#include "engine/kv_codec.hpp"
#include "engine/rank_engine.hpp"
#include "engine/rank_engine_sequence.hpp"

namespace deepinfer::engine {

namespace {

// Sequence buffer: this header, tokens (int32), then three length-prefixed sections: the KV
// rows (a kv_codec block of kv_len rows), the encoder window and the decoder window.
struct sequence_header {
  char magic[4] = {'D', 'I', 'S', 'Q'};
  uint32_t version = 2;
  int64_t tokens = 0;
  int64_t prompt_len = 0;
  int64_t kv_len = 0;
  /// The decoder mode, and 1 << 8 when the decoder windows are exact (their snapshots carry them).
  int64_t flags = 0;
};

void put(std::vector<std::byte>& out, const void* p, std::size_t n) {
  auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
}

void put_section(std::vector<std::byte>& out, const std::vector<std::byte>& s) {
  uint64_t n = s.size();
  put(out, &n, 8);
  put(out, s.data(), s.size());
}

bool take_section(std::span<const std::byte>& in, std::span<const std::byte>& s) {
  uint64_t n = 0;
  if (in.size() < 8)
    return false;
  std::memcpy(&n, in.data(), 8);
  if (in.size() - 8 < n)
    return false;
  s = in.subspan(8, n);
  in = in.subspan(8 + n);
  return true;
}

} // namespace

std::vector<decode_output> rank_engine::decode_step(std::span<const sequence_id> ids,
                                                    std::vector<float>* logits,
                                                    std::vector<float>* hidden) {
  const auto& c = model();
  std::vector<decode_output> out(ids.size());
  std::vector<sequence*> live;
  std::vector<std::size_t> slot;
  std::vector<forward_row> rows;
  std::vector<int32_t> toks;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out[i].seq = ids[i];
    auto it = seqs_.find(ids[i]);
    if (it == seqs_.end() || it->second->prefilling || it->second->finished) {
      out[i].status = it == seqs_.end() ? engine_status::unknown_sequence
                                        : engine_status::invalid_request;
      continue;
    }
    auto& s = *it->second;
    if (!pool_.allocate(s.id, s.kv_len + 1)) {
      out[i].status = engine_status::does_not_fit;
      continue;
    }
    live.push_back(&s);
    slot.push_back(i);
    rows.push_back({s.id, s.kv_len, &s.windows, &s.index_keys});
    toks.push_back(s.tokens[static_cast<std::size_t>(s.kv_len)]);
  }
  const auto n = static_cast<int64_t>(rows.size());
  std::vector<float> x(static_cast<std::size_t>(n * c.hidden));
  // The caller's vector when it wants the logits, else the engine's scratch.
  if (logits != nullptr)
    logits->resize(static_cast<std::size_t>(n * c.vocab_size));
  float* lg = logits != nullptr ? logits->data() : logits_scratch(n * c.vocab_size);
  if (n > 0) {
    forward_.encoder(rows, toks.data(), x.data());
    forward_.global_kv(rows, x.data(), pool_);
    forward_.decoder(rows, x.data(), pool_);
    forward_.logits(x.data(), n, lg);
  }
  for (int64_t r = 0; r < n; ++r) {
    auto& s = *live[r];
    ++s.kv_len;
    // Crossing a block boundary: keep the window there as the sequence's snapshot (DESIGN.md
    // §4.2's copy area; this step is synchronous, so the copy is taken exactly at the boundary).
    if (s.kv_len % 128 == 0)
      s.snapshots.assign(1, {s.kv_len, encode_snapshot(s, s.decoder_exact)});
    auto& o = out[slot[r]];
    o.finished = sample_and_append(s, lg + r * c.vocab_size, o.token);
  }
  if (draft_) {
    // Keeps the proposals current, so a later verify_step drafts from this step's states.
    std::vector<sequence*> next;
    std::vector<float> next_x;
    for (int64_t r = 0; r < n; ++r)
      if (live[r]->finished || !live[r]->sampling.prediction.empty())
        live[r]->proposal = {}; // a prediction drafts for itself
      else {
        next.push_back(live[r]);
        next_x.insert(next_x.end(), x.data() + r * c.hidden, x.data() + (r + 1) * c.hidden);
      }
    propose(next, next_x.data());
  }
  if (hidden != nullptr)
    *hidden = std::move(x);
  return out;
}

bool rank_engine::force_next_token(sequence_id id, int32_t token) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second->prefilling || token < 0 || token >= model().vocab_size)
    return false;
  it->second->tokens.back() = token;
  return true;
}

std::optional<std::vector<std::byte>> rank_engine::export_block(sequence_id id,
                                                                int64_t index) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || index < 0 || (index + 1) * 128 > it->second->kv_len)
    return std::nullopt;
  const auto& t = pool_.table(id);
  return kv_codec::encode_block(pool_.block_data(t[static_cast<std::size_t>(index)]), 128,
                                model().kv_floats_per_token(), model().fingerprint);
}

std::optional<std::vector<std::byte>> rank_engine::export_snapshot(sequence_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second->snapshots.empty())
    return std::nullopt;
  return it->second->snapshots.back().bytes;
}

std::optional<int64_t> rank_engine::snapshot_end(sequence_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second->snapshots.empty())
    return std::nullopt;
  return it->second->snapshots.back().end;
}

std::vector<snapshot_copy> rank_engine::export_snapshots(sequence_id id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? std::vector<snapshot_copy>{} : it->second->snapshots;
}

std::optional<std::vector<std::byte>> rank_engine::export_sequence(sequence_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || it->second->prefilling)
    return std::nullopt;
  const auto& s = *it->second;
  const auto& c = model();
  const int64_t fpt = c.kv_floats_per_token();
  sequence_header h;
  h.tokens = static_cast<int64_t>(s.tokens.size());
  h.prompt_len = s.prompt_len;
  h.kv_len = s.kv_len;
  h.flags = static_cast<int64_t>(s.mode) | (s.decoder_exact ? 1 << 8 : 0);
  // One allocation, and the KV rows copied once, block by block, straight from the pool: the
  // export of a long prompt is on its time to first token.
  const auto enc = kv_codec::encode_window(s.windows.encoder, s.windows.encoder_lo, c.fingerprint);
  const auto dec = kv_codec::encode_window(s.windows.decoder, s.windows.decoder_lo, c.fingerprint);
  const auto kv_bytes = kv_codec::block_bytes(s.kv_len, fpt);
  std::vector<std::byte> out;
  out.reserve(sizeof(h) + s.tokens.size() * sizeof(int32_t) + 24 + kv_bytes + enc.size() + dec.size());
  put(out, &h, sizeof(h));
  put(out, s.tokens.data(), s.tokens.size() * sizeof(int32_t));
  const uint64_t kv_size = kv_bytes;
  put(out, &kv_size, 8);
  std::array<std::byte, 64> block_header{};
  kv_codec::write_block_header(block_header, s.kv_len, fpt, c.fingerprint);
  put(out, block_header.data(), kv_codec::block_bytes(0, fpt));
  // Appended block by block (reserved above): no zero fill of the 35 MB of a 30K-token prompt.
  const auto& table = pool_.table(id);
  for (int64_t p = 0; p < s.kv_len; p += 128) {
    const auto rows = static_cast<std::size_t>(std::min<int64_t>(128, s.kv_len - p) * fpt);
    put(out, pool_.block_data(table[static_cast<std::size_t>(p / 128)]), rows * sizeof(float));
  }
  put_section(out, enc);
  put_section(out, dec);
  return out;
}

engine_status rank_engine::import_sequence(sequence_id id, std::span<const std::byte> in,
                                           const sampling_params& sampling, std::string* error,
                                           int32_t first_token) {
  const auto& c = model();
  auto fail = [&](engine_status st, const std::string& what) {
    if (error != nullptr)
      *error = what;
    pool_.free(id);
    return st;
  };
  if (seqs_.count(id))
    return fail(engine_status::invalid_request, "sequence already exists");
  sequence_header h;
  if (in.size() < sizeof(h))
    return fail(engine_status::bad_kv, "sequence buffer too short");
  std::memcpy(&h, in.data(), sizeof(h));
  if (std::memcmp(h.magic, "DISQ", 4) != 0 || h.version != 2 || (h.flags & 0xff) > 2 || h.tokens <= h.kv_len ||
      h.kv_len <= 0 || h.prompt_len > h.tokens ||
      in.size() < sizeof(h) + static_cast<std::size_t>(h.tokens) * 4)
    return fail(engine_status::bad_kv, "not a sequence buffer of this version");
  auto s = std::make_unique<sequence>();
  s->id = id;
  s->tokens.resize(static_cast<std::size_t>(h.tokens));
  std::memcpy(s->tokens.data(), in.data() + sizeof(h), s->tokens.size() * 4);
  in = in.subspan(sizeof(h) + s->tokens.size() * 4);
  if (first_token >= 0) {
    if (h.tokens != h.prompt_len + 1 || first_token >= model().vocab_size)
      return fail(engine_status::invalid_request, "a parallel sample starts right after its prompt, with a token of the vocabulary");
    s->tokens.back() = first_token;
  }
  s->prompt_len = h.prompt_len;
  s->kv_len = h.kv_len;
  s->mode = static_cast<decoder_mode>(h.flags & 0xff);
  s->decoder_exact = (h.flags & (1 << 8)) != 0;
  s->windows = sequence_windows::make(c);
  std::span<const std::byte> kv, enc, dec;
  if (!take_section(in, kv) || !take_section(in, enc) || !take_section(in, dec))
    return fail(engine_status::bad_kv, "sequence buffer truncated");
  if (!pool_.allocate(id, h.kv_len + 1))
    return fail(engine_status::does_not_fit, "kv pool full");
  const int64_t fpt = c.kv_floats_per_token();
  std::span<const std::byte> rows;
  auto err = kv_codec::block_rows(kv, h.kv_len, fpt, c.fingerprint, rows);
  kv_codec::window_info ei, di;
  if (err.empty())
    err = kv_codec::decode_window(enc, c.fingerprint, s->windows.encoder, ei);
  if (err.empty())
    err = kv_codec::decode_window(dec, c.fingerprint, s->windows.decoder, di);
  if (err.empty() && (ei.end != h.kv_len || di.end != h.kv_len))
    err = "windows do not end at the sequence's KV length";
  if (!err.empty())
    return fail(engine_status::bad_kv, err);
  const auto& table = pool_.table(id);
  for (int64_t p = 0; p < h.kv_len; p += 128) {
    const auto n = static_cast<std::size_t>(std::min<int64_t>(128, h.kv_len - p) * fpt);
    std::memcpy(pool_.block_data(table[static_cast<std::size_t>(p / 128)]),
                rows.data() + p * fpt * static_cast<int64_t>(sizeof(float)), n * sizeof(float));
  }
  s->windows.encoder_lo = ei.lo;
  s->windows.decoder_lo = di.lo;
  s->sampling = sampling;
  s->generated = static_cast<int32_t>(h.tokens - h.prompt_len);
  if (auto cerr = attach_constraint(*s); !cerr.empty()) {
    pool_.free(id);
    return fail(engine_status::invalid_request, cerr);
  }
  seqs_.emplace(id, std::move(s));
  return engine_status::ok;
}

void rank_engine::free(sequence_id id) {
  pool_.free(id);
  seqs_.erase(id);
}

std::optional<int64_t> rank_engine::computed(sequence_id id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return std::nullopt;
  return it->second->kv_len;
}

std::vector<int32_t> rank_engine::tokens(sequence_id id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? std::vector<int32_t>{} : it->second->tokens;
}

} // namespace deepinfer::engine
