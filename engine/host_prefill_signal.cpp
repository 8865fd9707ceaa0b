#include "engine/host_prefill_signal.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace deepinfer::engine {

/// The shared layout. Zero-filled when made (ftruncate), which is its empty state, so two
/// processes making it at once need no other agreement than the magic.
struct host_prefill_signal::segment {
  std::atomic<uint64_t> magic;
  /// Bumped when a scope closes while someone waits; the futex word the waiters sleep on.
  std::atomic<uint32_t> generation;
  std::atomic<uint32_t> waiters;
  /// pid << 32 | open scopes of that process; 0: free.
  std::atomic<uint64_t> slot[slots];
};

namespace {

constexpr uint64_t layout_magic = 0x3130'4652'5044'4944ULL; // "DIPREF01"
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the segment's words are shared between processes: they must be plain lock-free words");

uint32_t pid_of(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
uint32_t open_scopes(uint64_t v) { return static_cast<uint32_t>(v); }

bool process_gone(uint32_t pid) { return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

} // namespace

std::string host_prefill_signal::default_name() { return "/deepinfer-prefill-" + std::to_string(::getuid()); }

std::shared_ptr<host_prefill_signal> host_prefill_signal::open(const std::string& name, std::string& error) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) {
    error = "cannot open shared memory " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (st.st_size != 0 && st.st_size != static_cast<off_t>(sizeof(segment))) ||
      (st.st_size == 0 && ::ftruncate(fd, sizeof(segment)) != 0)) {
    error = "shared memory " + name + " has another size than this build's (" + std::to_string(st.st_size) +
            " bytes): remove /dev/shm" + name + " once no deepinfer process runs";
    ::close(fd);
    return nullptr;
  }
  void* at = ::mmap(nullptr, sizeof(segment), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    error = "cannot map shared memory " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  auto* seg = static_cast<segment*>(at);
  uint64_t magic = 0;
  if (!seg->magic.compare_exchange_strong(magic, layout_magic) && magic != layout_magic) {
    ::munmap(at, sizeof(segment));
    error = "shared memory " + name + " holds another layout: remove /dev/shm" + name +
            " once no deepinfer process runs";
    return nullptr;
  }
  const uint64_t mine = uint64_t{static_cast<uint32_t>(::getpid())} << 32;
  for (int i = 0; i < slots; ++i) {
    uint64_t v = seg->slot[i].load();
    // A free slot, or one a process that no longer exists left (its open scopes with it).
    if ((v == 0 || process_gone(pid_of(v))) && seg->slot[i].compare_exchange_strong(v, mine))
      return std::shared_ptr<host_prefill_signal>(new host_prefill_signal(seg, i, name));
  }
  ::munmap(at, sizeof(segment));
  error = "shared memory " + name + ": all " + std::to_string(slots) + " slots are held by running processes";
  return nullptr;
}

host_prefill_signal::host_prefill_signal(segment* seg, int slot, std::string name)
  : seg_(seg), slot_(slot), name_(std::move(name)) {}

host_prefill_signal::~host_prefill_signal() {
  seg_->slot[slot_].store(0);
  ::munmap(seg_, sizeof(segment));
}

host_prefill_signal::busy_scope::busy_scope(host_prefill_signal* s) : s_(s) {
  if (s_ != nullptr)
    s_->enter();
}

host_prefill_signal::busy_scope& host_prefill_signal::busy_scope::operator=(busy_scope&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr)
      s_->leave();
    s_ = std::exchange(o.s_, nullptr);
  }
  return *this;
}

host_prefill_signal::busy_scope::~busy_scope() {
  if (s_ != nullptr)
    s_->leave();
}

void host_prefill_signal::enter() { seg_->slot[slot_].fetch_add(1); }

void host_prefill_signal::leave() {
  seg_->slot[slot_].fetch_sub(1);
  // seq_cst on both sides: either a waiter that registered sees this count, or this sees it.
  if (seg_->waiters.load() > 0) {
    seg_->generation.fetch_add(1);
    futex(&seg_->generation, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

bool host_prefill_signal::busy_now() const {
  for (const auto& s : seg_->slot)
    if (open_scopes(s.load(std::memory_order_relaxed)) != 0)
      return true;
  return false;
}

bool host_prefill_signal::clear_dead_slots() {
  bool cleared = false;
  for (auto& s : seg_->slot) {
    uint64_t v = s.load();
    if (open_scopes(v) != 0 && process_gone(pid_of(v)) && s.compare_exchange_strong(v, 0))
      cleared = true;
  }
  return cleared;
}

bool host_prefill_signal::wait_idle(std::chrono::nanoseconds limit) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + limit;
  seg_->waiters.fetch_add(1);
  struct unregister {
    std::atomic<uint32_t>& w;
    ~unregister() { w.fetch_sub(1); }
  } unregister_on_return{seg_->waiters};
  clear_dead_slots();
  for (;;) {
    const uint32_t gen = seg_->generation.load();
    if (!busy_now())
      return true;
    const auto left = deadline - clock::now();
    if (left <= std::chrono::nanoseconds::zero())
      return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec t{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    // Returns at a wake, a generation that moved since it was read, a signal or the timeout:
    // each is a reason to look again.
    futex(&seg_->generation, FUTEX_WAIT, gen, &t);
  }
}

void prefill_yield::pause_point() {
  if (signal_ == nullptr || max_pause_ <= std::chrono::nanoseconds::zero() || !signal_->busy_now())
    return;
  const auto now = now_ns();
  if (now < run_until_ns_.load(std::memory_order_relaxed))
    return;
  const bool idle = signal_->wait_idle(max_pause_);
  const auto after = now_ns();
  paused_ns_.fetch_add(after - now, std::memory_order_relaxed);
  if (!idle)
    run_until_ns_.store(after + max_pause_.count(), std::memory_order_relaxed);
}

} // namespace deepinfer::engine
