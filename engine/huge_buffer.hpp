#pragma once

#include <cstddef>
#include <memory>

namespace deepinfer::engine {

/// Unmaps a huge_buffer's memory.
struct huge_buffer_release {
  std::size_t bytes = 0;
  void operator()(float* p) const;
};

/// A zeroed float buffer in transparent huge pages where the kernel offers them (2 MiB pages,
/// madvise(MADV_HUGEPAGE); plain pages otherwise). For the large buffers read at random (the KV
/// pool: a cross-attention row reads 256 scattered positions, a prefix hit's indexer gathers
/// every key): with 4 KiB pages nearly every such read is also a TLB miss.
class huge_buffer {
public:
  huge_buffer() = default;
  explicit huge_buffer(std::size_t floats);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

private:
  std::unique_ptr<float, huge_buffer_release> data_;
  std::size_t size_ = 0;
};

} // namespace deepinfer::engine
