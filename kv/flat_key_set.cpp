#include "kv/flat_key_set.hpp"

namespace deepinfer::kv {

flat_key_set::flat_key_set() : slots_(16), mask_(15) {
  // nop
}

bool flat_key_set::contains(const block_key& key) const {
  if (empty(key))
    return has_zero_;
  for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
    const auto& s = slots_[i];
    if (s == key)
      return true;
    if (empty(s))
      return false;
  }
}

bool flat_key_set::insert(const block_key& key) {
  if (empty(key)) {
    const bool added = !has_zero_;
    has_zero_ = true;
    return added;
  }
  // Keep the load factor at most 1/2 so probe runs stay short.
  if ((size_ + 1) * 2 > slots_.size())
    grow();
  for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
    auto& s = slots_[i];
    if (s == key)
      return false;
    if (empty(s)) {
      s = key;
      ++size_;
      return true;
    }
  }
}

bool flat_key_set::erase(const block_key& key) {
  if (empty(key)) {
    const bool had = has_zero_;
    has_zero_ = false;
    return had;
  }
  std::size_t i = slot_of(key);
  for (;; i = (i + 1) & mask_) {
    if (slots_[i] == key)
      break;
    if (empty(slots_[i]))
      return false;
  }
  // Backward-shift deletion: pull later members of the run into the hole when their home slot
  // allows it, so lookups never need tombstones.
  std::size_t hole = i;
  for (std::size_t j = (hole + 1) & mask_; !empty(slots_[j]); j = (j + 1) & mask_) {
    const std::size_t home = slot_of(slots_[j]);
    const bool movable = ((j - home) & mask_) >= ((j - hole) & mask_);
    if (movable) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = block_key{};
  --size_;
  return true;
}

void flat_key_set::grow() {
  std::vector<block_key> old(slots_.size() * 2);
  old.swap(slots_);
  mask_ = slots_.size() - 1;
  size_ = 0;
  for (const auto& k : old)
    if (!empty(k))
      insert(k);
}

} // namespace deepinfer::kv
