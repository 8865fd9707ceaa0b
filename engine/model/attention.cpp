// The two attention blocks of ced_moe_forward: sliding-window self-attention (encoder and
// decoder) and the decoder's cross-attention over global KV with indexer top-k selection.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "engine/model/forward.hpp"
#include "engine/model/indexer.hpp"
#include "engine/model/ops.hpp"
#include "engine/model/stage_timer.hpp"

namespace deepinfer::engine {

namespace {

// Per-worker gather buffers; sized on first use.
struct scratch {
  std::vector<float> scores, index_scores, block_scores, qcoef;
  std::vector<int64_t> picks;
  std::vector<const float*> kv[2]; // the picks of two rows: one attending, the next prefetching
  std::vector<int8_t> qcodes;
  std::vector<int32_t> qoffset;
};
thread_local scratch tls;



void fit(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n)
    v.resize(static_cast<std::size_t>(n));
}

} // namespace

void ced_moe_forward::self_attention(const attention_weights& a,
                                     std::span<const forward_row> rows, bool dec, int layer,
                                     float* x) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size()), h = c.hidden;
  const int64_t qd = int64_t{c.heads} * c.head_dim, kvd = int64_t{c.kv_heads} * c.head_dim;
  float* xn = buffer(work::sa_xn, n * h);
  float* q = buffer(work::sa_q, n * qd);
  float* k = buffer(work::sa_k, n * kvd);
  float* v = buffer(work::sa_v, n * kvd);
  float* att = buffer(work::sa_att, n * qd);
  serve_group();
  k_.rms_norm(x, n, h, a.norm, c.norm_eps, xn);
  const backend::product qkv[] = {{a.wq, qd, q}, {a.wk, kvd, k}, {a.wv, kvd, v}};
  b_.matmul_shared_input(xn, n, h, qkv);
  serve_group();
  std::vector<int64_t> first(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    ops::rope(q + r * qd, c.heads, c.head_dim, rope_at(rows[r].pos));
    ops::rope(k + r * kvd, c.kv_heads, c.head_dim, rope_at(rows[r].pos));
    first[r] = (r > 0 && rows[r - 1].seq == rows[r].seq) ? first[r - 1] : r;
  }
  const auto li = static_cast<std::size_t>(layer);
  // One key span per sequence of the batch: consecutive rows share almost all of their window,
  // so the span [window start of the first row, last row] is gathered (keys transposed) once and
  // every row attends to its own slice of it.
  std::vector<int64_t> span_of(static_cast<std::size_t>(n)), span_first;
  for (int64_t r = 0; r < n; ++r) {
    if (first[r] == r) {
      const auto& w = *rows[r].windows;
      if (spans_.size() <= span_first.size())
        spans_.emplace_back();
      spans_[span_first.size()].lo = std::max(dec ? w.decoder_lo : w.encoder_lo, rows[r].pos - c.window + 1);
      span_first.push_back(r);
    }
    span_of[r] = static_cast<int64_t>(span_first.size()) - 1;
    spans_[span_first.size() - 1].count = rows[r].pos - spans_[span_first.size() - 1].lo + 1;
  }
  auto& spans = spans_;
  b_.parallel_for(static_cast<int64_t>(span_first.size()), [&](int64_t g) {
    auto& sp = spans[static_cast<std::size_t>(g)];
    const int64_t r0 = span_first[static_cast<std::size_t>(g)];
    const swa_ring& ring = dec ? rows[r0].windows->decoder[li] : rows[r0].windows->encoder[li];
    const int64_t first_pos = rows[r0].pos;
    if (static_cast<int64_t>(sp.kt.size()) < sp.count * kvd) {
      sp.kt.resize(static_cast<std::size_t>(sp.count * kvd));
      sp.v.resize(sp.kt.size());
    }
    // Keys transposed 16 at a time: each component's 16 keys are one contiguous write (a key
    // per column would touch kvd cache lines per key).
    constexpr int64_t tb = 16;
    const float* kj[tb];
    for (int64_t j0 = sp.lo; j0 < sp.lo + sp.count; j0 += tb) {
      const int64_t m = std::min(tb, sp.lo + sp.count - j0);
      for (int64_t t = 0; t < m; ++t) {
        const int64_t j = j0 + t;
        kj[t] = j >= first_pos ? k + (r0 + j - first_pos) * kvd : ring.k(j);
        const float* vj = j >= first_pos ? v + (r0 + j - first_pos) * kvd : ring.v(j);
        std::memcpy(sp.v.data() + (j - sp.lo) * kvd, vj, sizeof(float) * kvd);
      }
      ops::put_columns(sp.kt.data(), sp.count, j0 - sp.lo, kj, m, kvd);
    }
  });
  // Blocks of up to 8 consecutive rows of one sequence: their windows share most keys, which the
  // kernel scores as one tile (each row's result is still its own, whatever its block).
  constexpr int64_t block_rows = 8;
  std::vector<std::pair<int64_t, int64_t>> blocks; // first row, rows
  for (int64_t r = 0; r < n;) {
    int64_t e = r + 1;
    while (e < n && e - r < block_rows && span_of[e] == span_of[r])
      ++e;
    blocks.emplace_back(r, e - r);
    r = e;
  }
  b_.parallel_for(static_cast<int64_t>(blocks.size()), [&](int64_t bi) {
    const auto [r0, count_rows] = blocks[static_cast<std::size_t>(bi)];
    const auto& sp = spans[static_cast<std::size_t>(span_of[r0])];
    int64_t first_key[block_rows], keys[block_rows];
    for (int64_t i = 0; i < count_rows; ++i) {
      const auto& row = rows[r0 + i];
      const int64_t lo = std::max(dec ? row.windows->decoder_lo : row.windows->encoder_lo,
                                  row.pos - c.window + 1);
      first_key[i] = lo - sp.lo;
      keys[i] = row.pos - lo + 1;
    }
    fit(tls.scores, std::max<int64_t>(block_rows * (c.window + block_rows + 32), int64_t{c.heads} * c.window));
    k_.attend_rows(q + r0 * qd, count_rows, qd, first_key, keys, sp.kt.data(), sp.count, sp.v.data(),
                   c.heads, c.kv_heads, c.head_dim, tls.scores.data(), att + r0 * qd);
  });
  serve_group();
  b_.matmul(att, n, qd, a.wo, h, x, true);
  for (int64_t r = 0; r < n; ++r) {
    auto& ring = dec ? rows[r].windows->decoder[li] : rows[r].windows->encoder[li];
    ring.push(rows[r].pos, k + r * kvd, v + r * kvd);
  }
}

void ced_moe_forward::cross_attention(const decoder_layer_weights& d,
                                      std::span<const forward_row> rows, int layer, float* x,
                                      const kv_pool& pool) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size()), h = c.hidden;
  const int64_t qd = int64_t{c.heads} * c.head_dim, kvd = int64_t{c.kv_heads} * c.head_dim;
  const int64_t iqd = int64_t{c.index_heads} * c.index_dim;
  const int64_t group = layer % c.kv_groups;
  const int64_t fpt = pool.geometry().floats_per_token, tpb = pool.geometry().tokens_per_block;
  float* xn = buffer(work::ca_xn, n * h);
  float* q = buffer(work::ca_q, n * qd);
  float* iq = buffer(work::ca_iq, n * iqd);
  float* att = buffer(work::ca_att, n * qd);
  serve_group();
  k_.rms_norm(x, n, h, d.cross_norm, c.norm_eps, xn);
  const backend::product queries[] = {{d.cross_wq, qd, q}, {d.index_wq, iqd, iq}};
  b_.matmul_shared_input(xn, n, h, queries);
  serve_group();
  for (int64_t r = 0; r < n; ++r)
    ops::rope(q + r * qd, c.heads, c.head_dim, rope_at(rows[r].pos));
  const int64_t ih = c.index_heads, idim = c.index_dim;
  // Rows go in blocks of a few rows of one sequence, each block a task on its own: its queries
  // quantized, its position scores computed tile by tile (a tile's key codes stay in cache for
  // every row of the block, the block's scores in this thread's cache), then each row picks its
  // top k and attends. Whole blocks as tasks keep both threads busy (a parallel loop per tile
  // was too short to wake the second one), and a row's result never depends on its block.
  constexpr int64_t block_rows = 8;
  struct row_block {
    const index_keys* keys;
    int64_t b0, rows;
  };
  std::vector<row_block> blocks;
  for (const auto& gr : index_keys_)
    for (int64_t b0 = gr.first; b0 < gr.first + gr.rows; b0 += block_rows)
      blocks.push_back({&gr, b0, std::min(block_rows, gr.first + gr.rows - b0)});
  const int64_t tile_bytes = indexer::tile_code_bytes(idim);
  const int64_t qbytes = indexer::query_code_bytes(ih, idim);
  b_.parallel_for(static_cast<int64_t>(blocks.size()), [&](int64_t bi) {
    const auto& blk = blocks[static_cast<std::size_t>(bi)];
    const auto& gr = *blk.keys;
    const bool scored = gr.ctx > c.index_topk;
    const int64_t tiles = scored ? (gr.ctx + indexer::tile - 1) / indexer::tile : 0;
    const int64_t stride = tiles * indexer::tile;
    if (scored) {
      stage_timer timer{stages_.index_scores};
      fit(tls.block_scores, blk.rows * stride);
      tls.qcodes.resize(static_cast<std::size_t>(blk.rows * qbytes));
      tls.qcoef.resize(static_cast<std::size_t>(blk.rows * ih));
      tls.qoffset.resize(tls.qcoef.size());
      const indexer::query_codes qc{tls.qcodes.data(), tls.qcoef.data(), tls.qoffset.data()};
      indexer::quantize_queries(iq + blk.b0 * iqd, blk.rows, ih, idim, d.index_w, qc);
      for (int64_t t = 0; t < tiles; ++t)
        k_.index_score_tile(qc, blk.rows, ih, idim, gr.cache->codes.data() + t * tile_bytes,
                            gr.cache->scales.data() + t * indexer::tile,
                            tls.block_scores.data() + t * indexer::tile, stride);
    }
    // Each row picks its top k, then attends to them. The picks are scattered over the whole
    // context (pool rows), so their K and V are prefetched as soon as they are known and the row
    // attends one step later, while the next row's top-k runs: the loads have that long to land.
    const auto kv_bytes = static_cast<int64_t>(sizeof(float)) * 2 * kvd;
    auto attend_row = [&](int64_t i) {
      stage_timer gathered{stages_.gathered_attention};
      auto& kv = tls.kv[i % 2];
      const auto nk = static_cast<int64_t>(kv.size());
      fit(tls.scores, nk * c.heads);
      k_.attend_gathered(q + (blk.b0 + i) * qd, kv.data(), kvd, nk, c.heads, c.kv_heads, c.head_dim,
                         tls.scores.data(), att + (blk.b0 + i) * qd);
    };
    for (int64_t i = 0; i < blk.rows; ++i) {
      const int64_t r = blk.b0 + i;
      const auto& row = rows[r];
      const auto& table = pool.table(row.seq);
      auto at = [&](int64_t j) {
        return pool.block_data(table[static_cast<std::size_t>(j / tpb)]) + (j % tpb) * fpt;
      };
      const int64_t ctx = row.pos + 1;
      auto& picks = tls.picks;
      if (ctx > c.index_topk) {
        // Indexer: every earlier position scored by sum_h w_h * relu(q_h . k_j); keep the top k.
        const float* sc = tls.block_scores.data() + i * stride;
        picks.resize(static_cast<std::size_t>(c.index_topk));
        fit(tls.index_scores, ctx);
        stage_timer timer{stages_.top_k};
        ops::top_k_positions(k_, sc, ctx, c.index_topk, picks.data(),
                             reinterpret_cast<uint32_t*>(tls.index_scores.data()));
      } else {
        picks.resize(static_cast<std::size_t>(ctx));
        std::iota(picks.begin(), picks.end(), int64_t{0});
      }
      auto& kv = tls.kv[i % 2];
      kv.resize(picks.size());
      for (std::size_t t = 0; t < picks.size(); ++t) {
        kv[t] = at(picks[t]) + 2 * group * kvd;
        const char* src = reinterpret_cast<const char*>(kv[t]);
        for (int64_t b = 0; b < kv_bytes; b += 64)
          __builtin_prefetch(src + b);
      }
      if (i > 0)
        attend_row(i - 1);
    }
    attend_row(blk.rows - 1);
  });
  serve_group();
  b_.matmul(att, n, qd, d.cross_wo, h, x, true);
}

void truncate_index_keys(index_key_cache& cache, int64_t count, int64_t index_dim) {
  if (cache.count <= count)
    return;
  constexpr int64_t tile = indexer::tile;
  const int64_t tile_bytes = indexer::tile_code_bytes(index_dim);
  for (int64_t j = count; j < cache.count; ++j)
    indexer::put_zero_key(index_dim, j % tile, cache.codes.data() + (j / tile) * tile_bytes,
                          cache.scales.data() + (j / tile) * tile);
  cache.count = count;
}

void ced_moe_forward::gather_index_keys(std::span<const forward_row> rows, const kv_pool& pool) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size()), idim = c.index_dim;
  const int64_t kvd = int64_t{c.kv_heads} * c.head_dim, ik_off = 2 * int64_t{c.kv_groups} * kvd;
  const int64_t fpt = pool.geometry().floats_per_token, tpb = pool.geometry().tokens_per_block;
  std::size_t groups = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (r == 0 || !(rows[r - 1].seq == rows[r].seq)) {
      if (index_keys_.size() <= groups)
        index_keys_.emplace_back();
      auto& g = index_keys_[groups++];
      g.first = r;
      g.rows = 0;
      g.ctx = 0;
    }
    auto& g = index_keys_[groups - 1];
    ++g.rows;
    g.ctx = std::max(g.ctx, rows[r].pos + 1);
  }
  index_keys_.resize(groups);
  // Each sequence's cache grows to its context (new tiles start as zero keys, so the slots past
  // the context score 0); then the new keys' records (quantized when their KV was written) are
  // copied in, in spans of a tile, every span a task.
  constexpr int64_t tile = indexer::tile;
  const int64_t tile_bytes = indexer::tile_code_bytes(idim);
  struct key_span {
    index_keys* g;
    int64_t begin, end;
  };
  std::vector<key_span> spans;
  for (auto& g : index_keys_) {
    if (g.ctx <= c.index_topk)
      continue;
    g.cache = rows[g.first].index ? rows[g.first].index : &g.own;
    if (g.cache == &g.own)
      g.own.count = 0;
    auto& cache = *g.cache;
    const int64_t tiles = (g.ctx + tile - 1) / tile;
    const auto have = static_cast<int64_t>(cache.scales.size()) / tile;
    if (have < tiles || cache.count == 0) {
      const int64_t from = cache.count == 0 ? 0 : have;
      cache.codes.resize(static_cast<std::size_t>(tiles * tile_bytes));
      cache.scales.resize(static_cast<std::size_t>(tiles * tile));
      // Slots up to the context get their records below; only the padding is zeroed here.
      for (int64_t j = std::max(from * tile, g.ctx); j < tiles * tile; ++j)
        indexer::put_zero_key(idim, j % tile, cache.codes.data() + (j / tile) * tile_bytes,
                              cache.scales.data() + (j / tile) * tile);
    }
    for (int64_t j = cache.count; j < g.ctx; j = (j / tile + 1) * tile)
      spans.push_back({&g, j, std::min(g.ctx, (j / tile + 1) * tile)});
  }
  b_.parallel_for(static_cast<int64_t>(spans.size()), [&](int64_t si) {
    const auto& sp = spans[static_cast<std::size_t>(si)];
    auto& cache = *sp.g->cache;
    const auto& table = pool.table(rows[sp.g->first].seq);
    auto key = [&](int64_t j) {
      return pool.block_data(table[static_cast<std::size_t>(j / tpb)]) + (j % tpb) * fpt + ik_off;
    };
    // Records lie a pool row apart (scattered over the blocks): fetch a few ahead, the hardware
    // prefetcher does not follow that stride across pages.
    constexpr int64_t ahead = 16;
    for (int64_t j = sp.begin; j < sp.end; ++j) {
      if (j + ahead < sp.end)
        __builtin_prefetch(key(j + ahead));
      indexer::put_record(reinterpret_cast<const uint8_t*>(key(j)), idim, j % tile,
                          cache.codes.data() + (j / tile) * tile_bytes, cache.scales.data() + (j / tile) * tile);
    }
  });
  for (auto& g : index_keys_)
    if (g.ctx > c.index_topk)
      g.cache->count = std::max(g.cache->count, g.ctx);
}

} // namespace deepinfer::engine
