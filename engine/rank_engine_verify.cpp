// rank_engine: speculative decoding — the draft head's proposals and their verification in one
// forward (DESIGN.md §5.3).
#include <algorithm>
#include <cstring>

#include "engine/kv_codec.hpp"
#include "engine/predicted_drafts.hpp"
#include "engine/rank_engine.hpp"
#include "engine/rank_engine_sequence.hpp"

namespace deepinfer::engine {

void rank_engine::propose(std::span<sequence* const> seqs, const float* x) {
  const auto n = static_cast<int64_t>(seqs.size());
  if (!draft_ || n == 0)
    return;
  if (proposing_paused_) {
    for (auto* s : seqs)
      s->proposal = {};
    return;
  }
  std::vector<int32_t> prev(static_cast<std::size_t>(n));
  std::vector<draft_proposal> out(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    prev[static_cast<std::size_t>(i)] = seqs[static_cast<std::size_t>(i)]->tokens.back();
  draft_->propose(x, prev.data(), n, out.data());
  for (int64_t i = 0; i < n; ++i)
    seqs[static_cast<std::size_t>(i)]->proposal = out[static_cast<std::size_t>(i)];
}

draft_proposal rank_engine::proposal(sequence_id id) const {
  auto it = seqs_.find(id);
  return it == seqs_.end() ? draft_proposal{} : proposal_of(*it->second);
}

const draft_proposal& rank_engine::proposal_of(sequence& s) const {
  // Drafted once per output length: the step's plan and its verification read the same one.
  if (s.sampling.prediction.empty() || s.finished || s.prefilling || s.predicted_at == s.tokens.size())
    return s.proposal;
  const auto from = static_cast<std::size_t>(std::clamp<int64_t>(s.sampling.output_from, 0, static_cast<int64_t>(s.tokens.size())));
  s.proposal = predicted_drafts(s.sampling.prediction, std::span(s.tokens).subspan(from));
  s.predicted_at = s.tokens.size();
  return s.proposal;
}

bool rank_engine::set_proposal(sequence_id id, const draft_proposal& p) {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || p.count < 0 || p.count > max_draft_positions)
    return false;
  for (int32_t j = 0; j < p.count; ++j)
    if (p.tokens[j] < 0 || p.tokens[j] >= model().vocab_size)
      return false;
  it->second->proposal = p;
  return true;
}

std::vector<std::byte> rank_engine::encode_snapshot_at(const sequence& s, int64_t end) const {
  if (end == s.kv_len)
    return encode_snapshot(s, s.decoder_exact);
  // A copy cut back to `end` (a few hundred KB, once per 128 tokens).
  auto w = s.windows;
  for (auto& r : w.encoder)
    r.truncate(end);
  for (auto& r : w.decoder)
    r.truncate(end);
  const auto& fp = model().fingerprint;
  auto out = kv_codec::encode_window(w.encoder, w.encoder_lo, fp);
  if (s.decoder_exact) {
    auto dec = kv_codec::encode_window(w.decoder, w.decoder_lo, fp);
    out.insert(out.end(), dec.begin(), dec.end());
  }
  return out;
}

std::vector<verify_output> rank_engine::verify_step(std::span<const verify_request> reqs) {
  const auto& c = model();
  const int64_t h = c.hidden, vocab = c.vocab_size;
  std::vector<verify_output> out(reqs.size());
  struct live_seq {
    sequence* s;
    std::size_t slot;
    int64_t first_row, rows;
  };
  std::vector<live_seq> live;
  std::vector<forward_row> rows;
  std::vector<int32_t> toks;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    out[i].seq = reqs[i].seq;
    auto it = seqs_.find(reqs[i].seq);
    if (it == seqs_.end() || it->second->prefilling || it->second->finished) {
      out[i].status = it == seqs_.end() ? engine_status::unknown_sequence : engine_status::invalid_request;
      continue;
    }
    auto& s = *it->second;
    // A request with a prediction drafts from it (the head's proposal is not used for it).
    proposal_of(s);
    // Never more drafts than proposed, than the rings' spare slots absorb, or than the tokens
    // the request may still emit (the last emitted one is always the target's own).
    const int64_t left = std::max<int64_t>(0, int64_t{s.sampling.max_tokens} - s.generated - 1);
    const int64_t k = std::clamp<int64_t>(reqs[i].drafts, 0,
                                          std::min<int64_t>({s.proposal.count, c.ring - c.window - 1, left}));
    if (!pool_.allocate(s.id, s.kv_len + 1 + k)) {
      out[i].status = engine_status::does_not_fit;
      continue;
    }
    live.push_back({&s, i, static_cast<int64_t>(rows.size()), 1 + k});
    rows.push_back({s.id, s.kv_len, &s.windows, &s.index_keys});
    toks.push_back(s.tokens[static_cast<std::size_t>(s.kv_len)]);
    for (int64_t j = 0; j < k; ++j) {
      rows.push_back({s.id, s.kv_len + 1 + j, &s.windows, &s.index_keys});
      toks.push_back(s.proposal.tokens[j]);
    }
    out[i].drafted = static_cast<int32_t>(k);
  }
  const auto n = static_cast<int64_t>(rows.size());
  if (n == 0)
    return out;
  std::vector<float> x(static_cast<std::size_t>(n * h));
  forward_.encoder(rows, toks.data(), x.data());
  forward_.global_kv(rows, x.data(), pool_);
  forward_.decoder(rows, x.data(), pool_);
  // Logits in chunks of whole sequences: 256 requests x 6 rows of a 129K vocabulary would be
  // 800 MB at once.
  constexpr int64_t chunk_rows = 256;
  std::vector<sequence*> next;       // sequences that draft again, and the row each drafts from
  std::vector<float> next_x;
  for (std::size_t a = 0; a < live.size();) {
    std::size_t b = a;
    int64_t chunk = 0;
    while (b < live.size() && (b == a || chunk + live[b].rows <= chunk_rows))
      chunk += live[b++].rows;
    float* lg = logits_scratch(chunk * vocab);
    forward_.logits(x.data() + live[a].first_row * h, chunk, lg);
    for (std::size_t q = a; q < b; ++q) {
      auto& l = live[q];
      auto& s = *l.s;
      auto& o = out[l.slot];
      const int64_t base = s.kv_len;
      int64_t used = 0; // rows whose fed token is now part of the sequence
      for (int64_t j = 0; j < l.rows; ++j) {
        sampled_token tok;
        float* row = lg + (l.first_row - live[a].first_row + j) * vocab;
        const bool done = sample_and_append(s, row, tok);
        used = j + 1;
        o.tokens.push_back(std::move(tok));
        if (done)
          break;
        // Row j + 1 fed draft j; it counts only if the target chose that very token here.
        if (j + 1 < l.rows && o.tokens.back().id != s.proposal.tokens[j])
          break;
        if (j + 1 < l.rows)
          ++o.accepted;
      }
      o.finished = s.finished;
      s.kv_len = base + used;
      if (used < l.rows) {
        for (auto& r : s.windows.encoder)
          r.truncate(s.kv_len);
        for (auto& r : s.windows.decoder)
          r.truncate(s.kv_len);
        truncate_index_keys(s.index_keys, s.kv_len, c.index_dim);
      }
      // Crossing a block boundary: the window as it was there is the sequence's snapshot
      // (DESIGN.md §4.2's copy area; at most 5 positions past it, still in the ring).
      const int64_t boundary = s.kv_len / 128 * 128;
      if (boundary > base)
        s.snapshots.assign(1, {boundary, encode_snapshot_at(s, boundary)});
      if (draft_ && !s.finished && s.sampling.prediction.empty()) {
        next.push_back(&s);
        const float* from = x.data() + (l.first_row + used - 1) * h;
        next_x.insert(next_x.end(), from, from + h);
      } else
        s.proposal = {};
    }
    a = b;
  }
  propose(next, next_x.data());
  return out;
}

} // namespace deepinfer::engine
