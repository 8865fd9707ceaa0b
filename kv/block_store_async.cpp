#include "kv/block_header.hpp"
#include "kv/block_store.hpp"
#include "kv/log.hpp"
#include "kv/thread_pool.hpp"
#include "recipe/base/assert.hpp"
#include "recipe/base/thread_name.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef DEEPINFER_HAVE_URING
#include <liburing.h>
#endif

namespace deepinfer::kv {

namespace {

#ifdef DEEPINFER_HAVE_URING
/// One read in flight on the ring: the header lands in `header`, the payload in the caller's buffer.
struct uring_read {
  block_key key;
  std::span<std::byte> out;
  block_store::read_callback done;
  block_catalog::lease lease;
  bool known = false;
  int fd = -1;
  std::array<std::byte, block_header::size> header;
  iovec iov[2];
};
#endif

std::string this_host() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0)
    return "localhost";
  std::string host{name.data()};
  // Dots separate the fields of a temporary file name.
  std::replace(host.begin(), host.end(), '.', '_');
  return host;
}

} // namespace

// Defined here, where `async_engine` is complete.
block_store::block_store(const config& cfg) : cfg_(cfg), host_(this_host()) {
  dir_ = cfg_.root / cfg_.fingerprint.value.to_hex();
}

/// The async engine: a thread pool for writes (temp file, fsync and rename are blocking system
/// calls) and, with io_uring, a ring for reads whose completions one reaper thread handles.
struct block_store::async_engine {
  std::unique_ptr<thread_pool> pool;
#ifdef DEEPINFER_HAVE_URING
  io_uring ring{};
  bool ring_ok = false;
  std::mutex submit_mtx;
  std::atomic<std::size_t> in_flight{0};
  std::atomic<bool> stopping{false};
  std::thread reaper;
#endif

  ~async_engine() {
#ifdef DEEPINFER_HAVE_URING
    if (ring_ok) {
      stopping = true;
      {
        std::lock_guard guard{submit_mtx};
        // A no-op with no user data wakes the reaper so it sees `stopping`.
        io_uring_sqe* sqe = io_uring_get_sqe(&ring);
        while (sqe == nullptr) {
          io_uring_submit(&ring);
          sqe = io_uring_get_sqe(&ring);
        }
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data(sqe, nullptr);
        io_uring_submit(&ring);
      }
      reaper.join();
      io_uring_queue_exit(&ring);
    }
#endif
    pool.reset(); // finishes queued jobs
  }
};

block_store::~block_store() {
  // Drain every queued and in-flight operation while the catalog still exists.
  async_.reset();
}

void block_store::start_async() {
  async_ = std::make_unique<async_engine>();
  async_->pool = std::make_unique<thread_pool>(cfg_.io_threads);
  backend_ = io_backend::thread_pool;
#ifdef DEEPINFER_HAVE_URING
  if (cfg_.backend == io_backend::thread_pool)
    return;
  const int rc = io_uring_queue_init(cfg_.uring_entries, &async_->ring, 0);
  if (rc < 0) {
    // Seccomp profiles of container runtimes often forbid io_uring: degrade, don't fail.
    log().warn("io_uring unavailable ({}), using the thread pool", -rc);
    return;
  }
  async_->ring_ok = true;
  backend_ = io_backend::uring;
  // The engine is passed in: `async_` reads null while the store's destructor resets it.
  async_->reaper = std::thread([this, engine = async_.get()] {
    name_this_thread("kv.uring");
    auto& eng = *engine;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&eng.ring, &cqe);
      if (rc == -EINTR)
        continue;
      DEEPINFER_ASSERT(rc >= 0, "io_uring wait failed: {}", -rc);
      auto* op = static_cast<uring_read*>(io_uring_cqe_get_data(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(&eng.ring, cqe);
      if (op == nullptr) {
        if (eng.stopping && eng.in_flight == 0)
          return;
        continue;
      }
      read_result result{read_status::io_error, 0};
      std::optional<traffic_class> cls;
      const auto got = res < 0 ? 0 : static_cast<std::size_t>(res);
      if (res >= 0 && got < block_header::size + op->out.size()) {
        result = finish_read(op->key, op->header, op->out, got, cls);
      } else if (res >= 0) {
        // A full buffer: the file might be longer than its header says; the blocking path checks.
        result = read_open_file(op->fd, op->key, op->out, cls);
      }
      op->lease.reset();
      after_read(op->fd, op->key, result, op->known, cls);
      ::close(op->fd);
      auto done = std::move(op->done);
      delete op;
      done(result);
      if (--eng.in_flight == 0 && eng.stopping)
        return;
    }
  });
#endif
}

bool block_store::read_async_uring(const block_key& key, std::span<std::byte> out,
                                   read_callback& done) {
#ifdef DEEPINFER_HAVE_URING
  if (!async_->ring_ok)
    return false;
  auto lease = catalog_.acquire(key);
  const bool known = static_cast<bool>(lease);
  if (!known && catalog_.find(key)) {
    done({read_status::not_found, 0});
    return true;
  }
  const int fd = ::open(path_of(key).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const bool missing = errno == ENOENT;
    lease.reset();
    if (missing && known)
      forget_missing(key);
    done({missing ? read_status::not_found : read_status::io_error, 0});
    return true;
  }
  auto* op = new uring_read{key, out, std::move(done), std::move(lease), known, fd, {}, {}};
  op->iov[0] = {op->header.data(), op->header.size()};
  op->iov[1] = {out.data(), out.size()};
  ++async_->in_flight;
  std::lock_guard guard{async_->submit_mtx};
  io_uring_sqe* sqe = io_uring_get_sqe(&async_->ring);
  while (sqe == nullptr) {
    io_uring_submit(&async_->ring);
    sqe = io_uring_get_sqe(&async_->ring);
  }
  io_uring_prep_readv(sqe, fd, op->iov, 2, 0);
  io_uring_sqe_set_data(sqe, op);
  // A queued but unsubmitted entry would wait for the next submission, maybe forever: retry
  // transient refusals (a full completion queue drains as the reaper runs).
  int rc = 0;
  while ((rc = io_uring_submit(&async_->ring)) == -EAGAIN || rc == -EBUSY || rc == -EINTR)
    std::this_thread::yield();
  DEEPINFER_ASSERT(rc >= 0, "io_uring submit failed: {}", -rc);
  return true;
#else
  (void) key;
  (void) out;
  (void) done;
  return false;
#endif
}

void block_store::read_async(const block_key& key, std::span<std::byte> out, read_callback done) {
  if (read_async_uring(key, out, done))
    return;
  async_->pool->submit([this, key, out, done = std::move(done)] { done(read(key, out)); });
}

void block_store::write_async(const block_key& key, std::span<const std::byte> payload,
                              traffic_class cls, write_callback done) {
  async_->pool->submit(
    [this, key, payload, cls, done = std::move(done)] { done(write(key, payload, cls)); });
}

} // namespace deepinfer::kv
