#include "engine/kv_pool.hpp"

#include "engine/log.hpp"
#include "recipe/base/assert.hpp"

namespace deepinfer::engine {

namespace {
const std::vector<block_id> empty_table;
} // namespace

kv_pool::kv_pool(const config& cfg)
    : config_(cfg), block_floats_(cfg.floats_per_token * cfg.tokens_per_block),
      data_(static_cast<std::size_t>(cfg.blocks * block_floats_)),
      refs_(static_cast<std::size_t>(cfg.blocks), 0) {
  free_.reserve(static_cast<std::size_t>(cfg.blocks));
  // Hand out low ids first: LIFO free list filled in reverse.
  for (int64_t i = cfg.blocks - 1; i >= 0; --i)
    free_.push_back(block_id{static_cast<uint32_t>(i)});
}

std::optional<kv_allocation> kv_pool::allocate(sequence_id seq, int64_t n_tokens) {
  auto& t = tables_[seq];
  int64_t need = (n_tokens + config_.tokens_per_block - 1) / config_.tokens_per_block;
  int64_t more = need - static_cast<int64_t>(t.size());
  if (more > static_cast<int64_t>(free_.size())) {
    if (t.empty())
      tables_.erase(seq);
    return std::nullopt;
  }
  for (int64_t i = 0; i < more; ++i) {
    auto b = free_.back();
    free_.pop_back();
    refs_[b.value] = 1;
    t.push_back(b);
  }
  return kv_allocation{t, static_cast<int64_t>(t.size()) * config_.tokens_per_block};
}

std::optional<block_id> kv_pool::take_block() {
  if (free_.empty())
    return std::nullopt;
  auto b = free_.back();
  free_.pop_back();
  refs_[b.value] = 1;
  return b;
}

void kv_pool::append_shared(sequence_id seq, block_id b) {
  DEEPINFER_ASSERT(refs_[b.value] > 0, "kv_pool: append_shared of a free block (block={})", b.value);
  ++refs_[b.value];
  tables_[seq].push_back(b);
}

void kv_pool::pin(block_id b) {
  DEEPINFER_ASSERT(refs_[b.value] > 0, "kv_pool: pin of a free block (block={})", b.value);
  ++refs_[b.value];
}

void kv_pool::unpin(block_id b) {
  DEEPINFER_ASSERT(refs_[b.value] > 0, "kv_pool: ref count below zero (block={})", b.value);
  if (--refs_[b.value] == 0)
    free_.push_back(b);
}

void kv_pool::free(sequence_id seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end())
    return;
  for (auto b : it->second)
    unpin(b);
  tables_.erase(it);
}

float* kv_pool::row(sequence_id seq, int64_t pos) {
  auto& t = tables_.at(seq);
  auto b = t[static_cast<std::size_t>(pos / config_.tokens_per_block)];
  return block_data(b) + (pos % config_.tokens_per_block) * config_.floats_per_token;
}

const float* kv_pool::row(sequence_id seq, int64_t pos) const {
  auto& t = tables_.at(seq);
  auto b = t[static_cast<std::size_t>(pos / config_.tokens_per_block)];
  return block_data(b) + (pos % config_.tokens_per_block) * config_.floats_per_token;
}

const std::vector<block_id>& kv_pool::table(sequence_id seq) const {
  auto it = tables_.find(seq);
  return it == tables_.end() ? empty_table : it->second;
}

} // namespace deepinfer::engine
