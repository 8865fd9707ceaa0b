#include "recipe/tokenizer/pre_tokenizer.hpp"
#include "recipe/tokenizer/tokenizer_impl.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace deepinfer::recipe {

namespace {

inline void spin_pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One parallel encode. Shared with the workers, so a worker that was descheduled and finishes
// after the call returned still touches live memory; the text is copied in for the same reason.
struct segment_job {
  struct item {
    std::size_t begin, end; // in `text`; empty for a special
    std::optional<token_id> special;
  };
  std::string text;
  std::vector<std::vector<item>> groups;
  std::vector<std::size_t> bytes; // text bytes per group
  std::vector<std::vector<token_id>> results; // written by whoever claimed the group
  std::unique_ptr<std::atomic<bool>[]> done;  // results[g] complete (release/acquire)
  std::atomic<std::size_t> next{0};

  void encode_group(const tokenizer::impl& tok, std::size_t g, std::vector<token_id>& out) const {
    for (const auto& it : groups[g]) {
      if (it.special)
        out.push_back(*it.special);
      else
        tok.encode_text(std::string_view{text}.substr(it.begin, it.end - it.begin), out);
    }
  }

  // Claims groups in order until none is left; returns how many it encoded.
  std::size_t work(const tokenizer::impl& tok) {
    std::size_t mine = 0;
    for (std::size_t g; (g = next.fetch_add(1)) < groups.size(); ++mine) {
      // Build in a local vector: results[g] and results[g + 1] share a cache line, and the two
      // threads appending to neighbouring vectors would bounce it on every token.
      std::vector<token_id> ids;
      ids.reserve(bytes[g] / 2 + groups[g].size());
      encode_group(tok, g, ids);
      results[g] = std::move(ids);
      done[g].store(true, std::memory_order_release);
    }
    return mine;
  }
};

} // namespace

std::vector<token_id> tokenizer::impl::encode_parallel(const prompt_segments& segments, std::size_t total) const {
  // 1. groups of consecutive items with about equal text; long segments are cut at safe line
  //    breaks. Four groups per thread: fewer cost less per group, more balance better and bound what the
  //    caller redoes when a worker is late.
  const std::size_t threads = pool->size() + 1;
  const std::size_t target = std::max<std::size_t>(4096, total / (threads * 4));
  auto job = std::make_shared<segment_job>();
  job->text.reserve(total);
  job->groups.emplace_back();
  std::size_t filled = 0;
  for (const auto& s : segments) {
    if (s.is_special()) {
      job->groups.back().push_back({0, 0, s.special_id});
      continue;
    }
    const std::string_view t = s.text;
    for (std::size_t from = 0; from < t.size();) {
      const std::size_t to = pre_tokenizer::next_cut(t, from, target - std::min(filled, target - 1));
      const std::size_t at = job->text.size();
      job->text.append(t.substr(from, to - from));
      job->groups.back().push_back({at, job->text.size(), std::nullopt});
      filled += to - from;
      job->bytes.resize(job->groups.size()); // groups of specials only may follow: resized below
      job->bytes.back() += to - from;
      from = to;
      if (filled >= target) {
        job->groups.emplace_back();
        filled = 0;
      }
    }
  }
  const std::size_t n = job->groups.size();
  job->results.resize(n);
  job->bytes.resize(n);
  job->done = std::make_unique<std::atomic<bool>[]>(n);
  // 2. the workers and this thread claim groups; this thread then redoes any group a worker has
  //    claimed but not finished instead of waiting (encoding is deterministic, so either copy
  //    is right).
  pool->start([job, this] { job->work(*this); });
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t mine = job->work(*this);
  // A group a worker still holds is waited for about as long as one group took here (a running
  // worker is done by then); past that the worker is probably descheduled, so redo it.
  const auto per_group = (std::chrono::steady_clock::now() - t0) / std::max<std::size_t>(mine, 1);
  std::vector<token_id> out;
  out.reserve(total / 3 + segments.size() + 8);
  std::vector<token_id> redo;
  for (std::size_t g = 0; g < n; ++g) {
    const auto deadline = std::chrono::steady_clock::now() + per_group + per_group / 2;
    while (!job->done[g].load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline)
      spin_pause(); // not yield(): on a busy machine that hands the core to another process
    if (job->done[g].load(std::memory_order_acquire)) {
      out.insert(out.end(), job->results[g].begin(), job->results[g].end());
    } else {
      redo.clear();
      job->encode_group(*this, g, redo);
      out.insert(out.end(), redo.begin(), redo.end());
    }
  }
  return out;
}

} // namespace deepinfer::recipe
