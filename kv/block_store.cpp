#include "kv/block_store.hpp"

#include "kv/block_header.hpp"
#include "kv/log.hpp"

#include <array>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

namespace deepinfer::kv {

namespace {

timespec to_timespec(int64_t ms) {
  return timespec{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1'000'000)};
}

int64_t mtime_ms(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

bool write_all(int fd, std::span<const std::byte> header, std::span<const std::byte> payload) {
  std::size_t done = 0;
  const std::size_t total = header.size() + payload.size();
  while (done < total) {
    iovec iov[2];
    int count = 0;
    if (done < header.size()) {
      iov[count++] = {const_cast<std::byte*>(header.data() + done), header.size() - done};
      iov[count++] = {const_cast<std::byte*>(payload.data()), payload.size()};
    } else {
      const auto off = done - header.size();
      iov[count++] = {const_cast<std::byte*>(payload.data() + off), payload.size() - off};
    }
    const auto n = ::writev(fd, iov, count);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

std::filesystem::path block_store::path_of(const block_key& key) const {
  auto hex = key.to_hex();
  return dir_ / hex.substr(0, 2) / (hex + ".kvb");
}

std::filesystem::path block_store::tmp_path(const block_key& key) {
  return dir_ / "tmp"
         / (key.to_hex() + "." + host_ + "." + std::to_string(::getpid()) + "."
            + std::to_string(tmp_seq_.fetch_add(1)) + ".tmp");
}

bool block_store::exists(const block_key& key) const {
  struct stat st;
  return ::stat(path_of(key).c_str(), &st) == 0;
}

void block_store::write_failed(const block_key& key, const char* what, int err) {
  failed_writes_.fetch_add(1, std::memory_order_relaxed);
  const bool disk_full = err == ENOSPC || err == EDQUOT;
  if (disk_full)
    space_pressure_.store(true);
  const auto unlogged = failures_unlogged_.fetch_add(1) + 1;
  const int64_t now = cfg_.time->now_ms();
  int64_t last = last_failure_log_ms_.load();
  if (last >= 0 && now - last < 10'000)
    return;
  if (!last_failure_log_ms_.compare_exchange_strong(last, now))
    return;  // another writer reports
  failures_unlogged_.fetch_sub(unlogged);
  const char* remedy = disk_full ? "; the GC evicts blocks to make room" : "";
  if (unlogged == 1)
    log().error("block={} {}: {} (the request goes on without caching it){}", key.to_hex(), what, std::strerror(err),
                remedy);
  else
    log().error("{} block writes failed in the last 10 s, the last ({}) {}: {}{}", unlogged, key.to_hex(), what,
                std::strerror(err), remedy);
}

write_status block_store::write(const block_key& key, std::span<const std::byte> payload,
                                traffic_class cls) {
  const auto path = path_of(key);
  const auto now = cfg_.time->now_ms();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    // Writing a stored block again is a use of it: refresh the persisted last use too.
    if (now - mtime_ms(st) >= cfg_.touch_interval_ms) {
      const timespec times[2] = {{0, UTIME_OMIT}, to_timespec(now)};
      ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    }
    remember(block_meta{key, static_cast<uint64_t>(st.st_size), cls, now});
    return write_status::exists;
  }
  // 1. Write everything under a private temporary name: a crash here leaves only debris that
  // the next `open` removes, never a partial block under the final name.
  const auto tmp = tmp_path(key);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    write_failed(key, "cannot create its file", errno);
    return write_status::io_error;
  }
  const auto header = block_header::make(key, cfg_.fingerprint, cls, now, payload).encode();
  bool ok = write_all(fd, header, payload);
  // The mtime is the persisted last use: set it from the configured clock, not the kernel's.
  const timespec times[2] = {{0, UTIME_OMIT}, to_timespec(now)};
  ok = ok && ::futimens(fd, times) == 0;
  if (ok && cfg_.fsync != fsync_policy::none)
    ok = ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  // 2. Publish atomically. Two writers of one key write the same bytes, so either rename wins.
  if (ok)
    ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int err = errno;
    ::unlink(tmp.c_str());
    write_failed(key, "write failed", err);
    return write_status::io_error;
  }
  if (cfg_.fsync == fsync_policy::file_and_dir) {
    const int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  remember(block_meta{key, header.size() + payload.size(), cls, now});
  return write_status::written;
}

read_result block_store::finish_read(const block_key& key, std::span<const std::byte> header,
                                     std::span<std::byte> out, std::size_t got,
                                     std::optional<traffic_class>& cls) {
  auto h = block_header::decode(header);
  if (got < block_header::size || !h || h->key != key || h->fingerprint != cfg_.fingerprint)
    return {read_status::corrupt, 0};
  if (h->payload_length > out.size())
    return {read_status::buffer_too_small, h->payload_length};
  // A file longer or shorter than its header says is as corrupt as a bad checksum.
  if (got != block_header::size + h->payload_length || !h->matches(out.first(h->payload_length)))
    return {read_status::corrupt, 0};
  cls = h->cls;
  return {read_status::ok, h->payload_length};
}

read_result block_store::read_open_file(int fd, const block_key& key, std::span<std::byte> out,
                                        std::optional<traffic_class>& cls) {
  std::array<std::byte, block_header::size> header;
  std::size_t got = 0;
  const std::size_t total = header.size() + out.size();
  while (got < total) {
    iovec iov[2];
    int count = 0;
    if (got < header.size()) {
      iov[count++] = {header.data() + got, header.size() - got};
      iov[count++] = {out.data(), out.size()};
    } else {
      iov[count++] = {out.data() + (got - header.size()), total - got};
    }
    const auto n = ::preadv(fd, iov, count, static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return {read_status::io_error, 0};
    }
    if (n == 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  // A caller buffer larger than the payload leaves `got` short of `total`; one more byte past
  // it would mean the file is longer than its header claims.
  if (got == total) {
    std::byte extra;
    if (::pread(fd, &extra, 1, static_cast<off_t>(got)) == 1)
      ++got;
  }
  return finish_read(key, header, out, got, cls);
}

void block_store::after_read(int fd, const block_key& key, const read_result& result, bool known,
                             std::optional<traffic_class> cls) {
  const auto now = cfg_.time->now_ms();
  if (result.status == read_status::ok) {
    if (known) {
      catalog_.touch(key, now);
    } else {
      // Written by another process: adopt it so GC and LRU see it.
      remember(block_meta{key, block_header::size + result.bytes, *cls, now});
    }
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0 && now - mtime_ms(st) >= cfg_.touch_interval_ms) {
      const timespec times[2] = {{0, UTIME_OMIT}, to_timespec(now)};
      ::futimens(fd, times);
    }
  } else if (result.status == read_status::corrupt) {
    log().warn("block={} failed verification, removing it", key.to_hex());
    if (!remove(key))
      unlink_block(key);
    if (index_ != nullptr)
      index_->erase(key);
  }
}

read_result block_store::read(const block_key& key, std::span<std::byte> out) {
  // A known block is pinned for the whole read so that GC cannot remove it under us; a block
  // another process wrote is read unpinned (the open descriptor keeps its bytes alive).
  auto lease = catalog_.acquire(key);
  const bool known = static_cast<bool>(lease);
  if (!known && catalog_.find(key))
    return {read_status::not_found, 0}; // being removed
  const int fd = ::open(path_of(key).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const bool missing = errno == ENOENT;
    lease.reset();
    if (missing && known)
      forget_missing(key); // removed by another process
    return {missing ? read_status::not_found : read_status::io_error, 0};
  }
  std::optional<traffic_class> cls;
  const auto result = read_open_file(fd, key, out, cls);
  lease.reset();
  after_read(fd, key, result, known, cls);
  ::close(fd);
  return result;
}

std::optional<std::size_t> block_store::payload_size(const block_key& key) const {
  if (auto meta = catalog_.find(key))
    return meta->bytes - block_header::size;
  const int fd = ::open(path_of(key).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  std::array<std::byte, block_header::size> header;
  const auto n = ::pread(fd, header.data(), header.size(), 0);
  ::close(fd);
  auto h = block_header::decode(std::span{header}.first(n > 0 ? static_cast<std::size_t>(n) : 0));
  if (!h)
    return std::nullopt;
  return h->payload_length;
}

bool block_store::unlink_block(const block_key& key) {
  return ::unlink(path_of(key).c_str()) == 0 || errno == ENOENT;
}

bool block_store::remove(const block_key& key) {
  if (!catalog_.begin_remove(key))
    return false;
  if (index_ != nullptr)
    index_->erase(key);
  const bool gone = unlink_block(key);
  if (!gone && index_ != nullptr)
    index_->insert(key);
  catalog_.end_remove(key, gone);
  return gone;
}

bool block_store::remember(const block_meta& meta) {
  if (index_ != nullptr)
    index_->insert(meta.key);
  return catalog_.insert(meta);
}

void block_store::forget_missing(const block_key& key) {
  catalog_.forget(key);
  if (index_ != nullptr)
    index_->erase(key);
}

gc::remover block_store::remover() {
  return [this](const block_key& key) { return unlink_block(key); };
}

check_index::probe block_store::probe() const {
  return [this](const block_key& key) { return exists(key); };
}

} // namespace deepinfer::kv
