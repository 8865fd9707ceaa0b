// Block store throughput with 112 KiB blocks (write, cold read, warm read; 1 and 8 threads),
// side by side with plain file write/read of the same payload sizes on the same disk.
//
//   bench_kv_store_throughput [--dir DIR] [--blocks N] [--repeats R] [--fsync none|file]
//
// "cold" reads follow fdatasync + POSIX_FADV_DONTNEED on every file of both sides, so they come
// from the device (as far as the kernel honours the advice); "warm" reads repeat from page cache.
#include "kv/block_store.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using namespace deepinfer::kv;

namespace {

constexpr std::size_t block_bytes = 112 * 1024;

struct bench_env {
  std::filesystem::path dir;
  std::size_t blocks = 1024;
  fsync_policy fsync = fsync_policy::file;
  std::size_t repeats = 3;
  std::vector<std::byte> payload = std::vector<std::byte>(block_bytes);
  std::atomic<int> errors{0};
};

block_key key_of(std::size_t round, std::size_t i) {
  return block_key{i * 0x9E3779B97F4A7C15ULL + round + 1, round};
}

std::filesystem::path plain_path(const bench_env& env, std::size_t round, std::size_t i) {
  char sub[3];
  std::snprintf(sub, sizeof(sub), "%02zx", i & 0xff);
  return env.dir / "plain" / sub / (std::to_string(round) + "_" + std::to_string(i) + ".bin");
}

/// Runs fn(i) for i in [0, n) on `threads` threads; returns seconds.
template <class Fn>
double parallel(std::size_t n, std::size_t threads, Fn&& fn) {
  std::atomic<std::size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next.fetch_add(1)) < n;)
        fn(i);
    });
  for (auto& th : pool)
    th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void drop_cache(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

void report(const char* what, std::size_t threads, std::size_t n, double seconds) {
  const double mib = static_cast<double>(n * block_bytes) / (1024.0 * 1024.0);
  std::printf("%-34s threads %zu  %8.1f MiB/s  %8.0f blocks/s  %7.1f us/block\n", what, threads,
              mib / seconds, static_cast<double>(n) / seconds, seconds * 1e6 / static_cast<double>(n));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double write_store(bench_env& env, block_store& store, std::size_t round, std::size_t threads) {
  return parallel(env.blocks, threads, [&](std::size_t i) {
    if (store.write(key_of(round, i), env.payload, traffic_class::chatbot) != write_status::written)
      ++env.errors;
  });
}

double write_plain(bench_env& env, std::size_t round, std::size_t threads) {
  return parallel(env.blocks, threads, [&](std::size_t i) {
    const int fd = ::open(plain_path(env, round, i).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, env.payload.data(), block_bytes) != static_cast<ssize_t>(block_bytes))
      ++env.errors;
    if (env.fsync != fsync_policy::none)
      ::fsync(fd);
    ::close(fd);
  });
}

double read_plain(bench_env& env, std::size_t round, std::size_t threads) {
  return parallel(env.blocks, threads, [&](std::size_t i) {
    thread_local std::vector<std::byte> buf(block_bytes);
    const int fd = ::open(plain_path(env, round, i).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::read(fd, buf.data(), block_bytes) != static_cast<ssize_t>(block_bytes))
      ++env.errors;
    ::close(fd);
  });
}

double read_store(bench_env& env, block_store& store, std::size_t round, std::size_t threads) {
  return parallel(env.blocks, threads, [&](std::size_t i) {
    thread_local std::vector<std::byte> buf(block_bytes);
    if (store.read(key_of(round, i), buf).status != read_status::ok)
      ++env.errors;
  });
}

/// The async API at queue depth 32 from one submitting thread (io_uring when available).
double read_async(bench_env& env, block_store& store, std::size_t round) {
  std::vector<std::vector<std::byte>> bufs(32, std::vector<std::byte>(block_bytes));
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t base = 0; base < env.blocks; base += 32) {
    std::vector<std::promise<void>> done(std::min<std::size_t>(32, env.blocks - base));
    for (std::size_t j = 0; j < done.size(); ++j)
      store.read_async(key_of(round, base + j), bufs[j], [&, j](read_result r) {
        if (r.status != read_status::ok)
          ++env.errors;
        done[j].set_value();
      });
    for (auto& d : done)
      d.get_future().wait();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void drop_all(const bench_env& env, block_store& store, std::size_t round) {
  for (std::size_t i = 0; i < env.blocks; ++i) {
    drop_cache(store.path_of(key_of(round, i)));
    drop_cache(plain_path(env, round, i));
  }
}

/// Every figure is the median of `repeats` runs; plain and store alternate which goes first.
void run_threads(bench_env& env, block_store& store, std::size_t threads) {
  const std::size_t base = threads * 100;
  std::vector<double> sw, pw, sc, pc, ac, swm, pwm, awm;
  for (std::size_t rep = 0; rep < env.repeats; ++rep) {
    const auto round = base + rep;
    if (rep % 2 == 0) {
      sw.push_back(write_store(env, store, round, threads));
      pw.push_back(write_plain(env, round, threads));
    } else {
      pw.push_back(write_plain(env, round, threads));
      sw.push_back(write_store(env, store, round, threads));
    }
  }
  for (std::size_t rep = 0; rep < env.repeats; ++rep) {
    drop_all(env, store, base);
    if (rep % 2 == 0) {
      sc.push_back(read_store(env, store, base, threads));
      pc.push_back(read_plain(env, base, threads));
    } else {
      pc.push_back(read_plain(env, base, threads));
      sc.push_back(read_store(env, store, base, threads));
    }
    drop_all(env, store, base);
    ac.push_back(read_async(env, store, base));
  }
  // Warm both sides' page cache before the warm repetitions.
  read_plain(env, base, threads);
  read_store(env, store, base, threads);
  for (std::size_t rep = 0; rep < env.repeats; ++rep) {
    swm.push_back(read_store(env, store, base, threads));
    pwm.push_back(read_plain(env, base, threads));
    awm.push_back(read_async(env, store, base));
  }
  report("write  kv block_store", threads, env.blocks, median(sw));
  report("write  plain open/write/close", threads, env.blocks, median(pw));
  report("read   kv block_store cold", threads, env.blocks, median(sc));
  report("read   plain open/read/close cold", threads, env.blocks, median(pc));
  report("read   kv read_async QD32 cold", 1, env.blocks, median(ac));
  report("read   kv block_store warm", threads, env.blocks, median(swm));
  report("read   plain open/read/close warm", threads, env.blocks, median(pwm));
  report("read   kv read_async QD32 warm", 1, env.blocks, median(awm));
}

} // namespace

int main(int argc, char** argv) {
  bench_env env;
  env.dir = std::filesystem::temp_directory_path() / "kv_store_throughput";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir")
      env.dir = argv[i + 1];
    else if (flag == "--blocks")
      env.blocks = std::stoull(argv[i + 1]);
    else if (flag == "--repeats")
      env.repeats = std::stoull(argv[i + 1]);
    else if (flag == "--fsync")
      env.fsync = std::string(argv[i + 1]) == "none" ? fsync_policy::none : fsync_policy::file;
  }
  for (std::size_t i = 0; i < env.payload.size(); ++i)
    env.payload[i] = static_cast<std::byte>(i * 31 + 7);
  std::filesystem::remove_all(env.dir);
  for (int i = 0; i < 256; ++i) {
    char sub[3];
    std::snprintf(sub, sizeof(sub), "%02x", i);
    std::filesystem::create_directories(env.dir / "plain" / sub);
  }
  block_store::config cfg;
  cfg.root = env.dir / "store";
  cfg.fingerprint = model_fingerprint::of("bench/throughput");
  cfg.fsync = env.fsync;
  cfg.io_threads = 8;
  auto store = block_store::open(cfg);
  std::printf("dir %s, %zu blocks of %zu KiB per phase, fsync %s, async backend %s\n",
              env.dir.c_str(), env.blocks, block_bytes / 1024,
              env.fsync == fsync_policy::none ? "none" : "file",
              store->backend() == io_backend::uring ? "io_uring" : "thread_pool");
  for (std::size_t threads : {1, 8})
    run_threads(env, *store, threads);
  if (env.errors > 0)
    std::printf("ERRORS: %d\n", env.errors.load());
  store.reset();
  std::filesystem::remove_all(env.dir);
  return 0;
}
