#include "engine/huge_buffer.hpp"

#include <sys/mman.h>

#include <new>

namespace deepinfer::engine {

namespace {
constexpr std::size_t huge_page = std::size_t{2} << 20;
} // namespace

huge_buffer::huge_buffer(std::size_t floats) : size_(floats) {
  const std::size_t bytes = (floats * sizeof(float) + huge_page - 1) / huge_page * huge_page;
  if (bytes == 0)
    return;
  // Anonymous memory is zero; the hint comes before the first touch, so the pages are huge from
  // the start.
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw std::bad_alloc();
  (void)::madvise(p, bytes, MADV_HUGEPAGE);
  data_ = std::unique_ptr<float, huge_buffer_release>(static_cast<float*>(p), huge_buffer_release{bytes});
  // Fault every page in now (one write per 4 KiB, a no-op on a huge page's other 511), so the
  // first requests do not pay for it.
  auto* bytes_p = static_cast<volatile char*>(p);
  for (std::size_t at = 0; at < bytes; at += 4096)
    bytes_p[at] = 0;
}

void huge_buffer_release::operator()(float* p) const {
  if (p != nullptr)
    ::munmap(p, bytes);
}

} // namespace deepinfer::engine
