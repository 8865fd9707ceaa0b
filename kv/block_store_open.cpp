#include "kv/block_header.hpp"
#include "kv/block_store.hpp"
#include "kv/log.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace deepinfer::kv {

namespace {

int64_t mtime_ms(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

/// True if a temporary file named `<key>.<host>.<pid>.<seq>.tmp` belongs to a live writer.
bool writer_alive(std::string_view name, const std::string& host) {
  const auto first = name.find('.');
  const auto second = first == std::string_view::npos ? first : name.find('.', first + 1);
  const auto third = second == std::string_view::npos ? second : name.find('.', second + 1);
  if (third == std::string_view::npos)
    return false;
  if (name.substr(first + 1, second - first - 1) != host)
    return true; // another host: only age can tell
  const auto pid = std::atoi(std::string{name.substr(second + 1, third - second - 1)}.c_str());
  return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH);
}

/// Calls `fn(path, key)` for every block file under a fingerprint directory.
template <class Fn>
void for_each_block_file(const std::filesystem::path& dir, Fn&& fn) {
  std::error_code ec;
  for (const auto& sub : std::filesystem::directory_iterator(dir, ec)) {
    if (!sub.is_directory() || sub.path().filename() == "tmp")
      continue;
    for (const auto& entry : std::filesystem::directory_iterator(sub.path(), ec)) {
      const auto key = block_key::from_hex(entry.path().stem().string());
      if (key && entry.path().extension() == ".kvb")
        fn(entry.path(), *key);
    }
  }
}

} // namespace

std::unique_ptr<block_store> block_store::open(const config& cfg, check_index* index) {
  std::unique_ptr<block_store> store{new block_store(cfg)};
  store->index_ = index;
  if (!store->prepare())
    return nullptr;
  store->rescan();
  store->start_async();
  log().info("store root={} blocks={} bytes={} debris_removed={} bad_removed={} backend={}",
             store->dir_.string(), store->scan_.blocks, store->scan_.bytes,
             store->scan_.debris_removed, store->scan_.bad_removed,
             store->backend_ == io_backend::uring ? "uring" : "thread_pool");
  return store;
}

bool block_store::prepare() {
  std::error_code ec;
  std::filesystem::create_directories(dir_ / "tmp", ec);
  if (ec) {
    log().error("store root={} unusable: {}", dir_.string(), ec.message());
    return false;
  }
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) {
    const char sub[3] = {digits[i >> 4], digits[i & 15], 0};
    std::filesystem::create_directory(dir_ / sub, ec);
    if (ec) {
      log().error("store root={} unusable: {}", dir_.string(), ec.message());
      return false;
    }
  }
  return true;
}

void block_store::rescan() {
  const auto now = cfg_.time->now_ms();
  std::error_code ec;
  // 1. Temporary files of dead writers are debris of a crash.
  for (const auto& entry : std::filesystem::directory_iterator(dir_ / "tmp", ec)) {
    struct stat st;
    const auto name = entry.path().filename().string();
    if (::stat(entry.path().c_str(), &st) != 0)
      continue;
    if (!writer_alive(name, host_) || now - mtime_ms(st) > cfg_.stale_tmp_ms) {
      if (::unlink(entry.path().c_str()) == 0)
        ++scan_.debris_removed;
    }
  }
  // 2. Block files: headers only. The catalog is filled oldest first so that LRU order follows
  // the persisted last use (mtime).
  std::vector<block_meta> found;
  for_each_block_file(dir_, [&](const std::filesystem::path& path, const block_key& key) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return;
    std::array<std::byte, block_header::size> header;
    struct stat st;
    const auto n = ::pread(fd, header.data(), header.size(), 0);
    const bool stat_ok = ::fstat(fd, &st) == 0;
    ::close(fd);
    auto h = block_header::decode(std::span{header}.first(n > 0 ? static_cast<std::size_t>(n) : 0));
    if (!stat_ok || !h || h->key != key || h->fingerprint != cfg_.fingerprint
        || static_cast<uint64_t>(st.st_size) != block_header::size + h->payload_length) {
      if (::unlink(path.c_str()) == 0)
        ++scan_.bad_removed;
      return;
    }
    found.push_back(block_meta{key, static_cast<uint64_t>(st.st_size), h->cls, mtime_ms(st)});
  });
  std::sort(found.begin(), found.end(),
            [](const block_meta& a, const block_meta& b) { return a.last_use_ms < b.last_use_ms; });
  for (const auto& meta : found) {
    if (remember(meta)) {
      ++scan_.blocks;
      scan_.bytes += meta.bytes;
    }
  }
}

verify_report block_store::verify(bool remove_corrupt) {
  verify_report report;
  std::vector<std::byte> buf;
  for_each_block_file(dir_, [&](const std::filesystem::path& path, const block_key& key) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
      return;
    buf.resize(size > block_header::size ? size - block_header::size : 0);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return;
    std::optional<traffic_class> cls;
    const auto result = read_open_file(fd, key, buf, cls);
    ::close(fd);
    if (result.status == read_status::ok) {
      ++report.ok;
      return;
    }
    ++report.corrupt;
    log().warn("block={} corrupt: {}", key.to_hex(), path.string());
    if (remove_corrupt && (remove(key) || unlink_block(key)))
      ++report.removed;
  });
  return report;
}

} // namespace deepinfer::kv
