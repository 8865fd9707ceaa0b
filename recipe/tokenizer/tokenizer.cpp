#include "recipe/tokenizer/tokenizer.hpp"

#include "recipe/tokenizer/pre_tokenizer.hpp"
#include "recipe/tokenizer/tokenizer_impl.hpp"
#include "recipe/tokenizer/utf8.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace deepinfer::recipe {

namespace {

// Text is pre-tokenized in chunks of about this size (cut at safe line breaks) so the scratch
// arrays stay in cache.
constexpr std::size_t chunk_bytes = 64 * 1024;
// Pieces up to this length are memoized per thread; longer ones are rare and cheap to redo.
constexpr std::size_t cached_piece_max = 32;
constexpr std::size_t cache_capacity = 1 << 16;

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Per-thread scratch and piece cache of one tokenizer instance.
struct worker_state {
  std::uint64_t owner = 0;
  pre_tokenizer pre;
  std::vector<std::uint32_t> ends;
  std::unordered_map<std::string, std::vector<token_id>, string_hash, std::equal_to<>> cache;
};

// A thread keeps the states of the last few tokenizers it used (a process may hold the V3.2 and
// the V4.1 tokenizer, or a single-threaded and a pooled one, and alternate between them).
worker_state& local_state(std::uint64_t instance) {
  constexpr std::size_t slots = 4;
  thread_local std::vector<std::unique_ptr<worker_state>> states;
  for (std::size_t i = 0; i < states.size(); ++i)
    if (states[i]->owner == instance) {
      if (i != 0)
        std::swap(states[i], states[0]); // most recent first
      return *states[0];
    }
  if (states.size() < slots)
    states.push_back(std::make_unique<worker_state>());
  auto& victim = states.back(); // least recently used
  victim->owner = instance;
  victim->cache.clear();
  std::swap(victim, states[0]);
  return *states[0];
}

} // namespace

void tokenizer::impl::encode_text(std::string_view text, std::vector<token_id>& out) const {
  worker_state& w = local_state(instance);
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t to = pre_tokenizer::next_cut(text, from, chunk_bytes);
    const std::string_view chunk = text.substr(from, to - from);
    w.ends.clear();
    w.pre.split(chunk, w.ends);
    std::size_t b = 0;
    for (const std::uint32_t e : w.ends) {
      const std::string_view piece = chunk.substr(b, e - b);
      b = e;
      if (piece.size() <= 1 || piece.size() > cached_piece_max) {
        bpe->encode_piece(piece, out);
        continue;
      }
      if (auto it = w.cache.find(piece); it != w.cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
      const std::size_t start = out.size();
      bpe->encode_piece(piece, out);
      if (w.cache.size() >= cache_capacity)
        w.cache.clear();
      w.cache.emplace(std::string{piece}, std::vector<token_id>(out.begin() + static_cast<std::ptrdiff_t>(start), out.end()));
    }
    from = to;
  }
}

tokenizer::tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

tokenizer::~tokenizer() = default;

std::vector<token_id> tokenizer::impl::encode_serial(const prompt_segments& segments, std::size_t total) const {
  std::vector<token_id> out;
  out.reserve(total / 3 + segments.size() + 8);
  for (const auto& s : segments) {
    if (s.is_special())
      out.push_back(*s.special_id);
    else
      encode_text(s.text, out);
  }
  return out;
}

std::vector<token_id> tokenizer::encode(std::string_view text) const {
  std::vector<token_id> out;
  out.reserve(text.size() / 3 + 8);
  impl_->encode_text(text, out);
  return out;
}

std::vector<token_id> tokenizer::encode(const prompt_segments& segments) const {
  std::size_t total = 0;
  for (const auto& s : segments)
    if (!s.is_special())
      total += s.text.size();
  if (!impl_->pool || total < impl_->cfg.parallel_min_bytes)
    return impl_->encode_serial(segments, total);
  if (!impl_->cfg.adaptive)
    return impl_->encode_parallel(segments, total);
  // Adaptive: time both ways (ns per byte, moving averages) and use the faster, trying the other
  // one call in 8 so that the choice follows the machine's load.
  auto& a = impl_->adapt;
  const std::uint64_t call = a.calls.fetch_add(1, std::memory_order_relaxed);
  const double serial = a.serial_ns_per_byte.load(std::memory_order_relaxed);
  const double parallel = a.parallel_ns_per_byte.load(std::memory_order_relaxed);
  bool use_parallel = serial == 0 || parallel == 0 ? call % 2 == 0 : parallel < serial;
  if (call % 8 == 7)
    use_parallel = !use_parallel;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = use_parallel ? impl_->encode_parallel(segments, total) : impl_->encode_serial(segments, total);
  const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  auto& avg = use_parallel ? a.parallel_ns_per_byte : a.serial_ns_per_byte;
  const double old = avg.load(std::memory_order_relaxed), now = ns / static_cast<double>(total);
  avg.store(old == 0 ? now : 0.5 * old + 0.5 * now, std::memory_order_relaxed);
  return out;
}

std::vector<token_id> tokenizer::encode_with_special_tokens(std::string_view text) const {
  // HF splits on the non-normalized added tokens first, then on the normalized ones inside what
  // is left; at each position the leftmost, then longest, match wins.
  struct part {
    std::string_view text;
    std::optional<token_id> id;
  };
  std::vector<part> parts{{text, std::nullopt}};
  for (const bool normalized : {false, true}) {
    std::vector<const added_token*> by_first[256];
    for (const auto& a : impl_->added)
      if (a.normalized == normalized)
        by_first[static_cast<unsigned char>(a.content[0])].push_back(&a);
    for (auto& v : by_first)
      std::sort(v.begin(), v.end(), [](auto* x, auto* y) { return x->content.size() > y->content.size(); });
    std::vector<part> next;
    for (const auto& p : parts) {
      if (p.id) {
        next.push_back(p);
        continue;
      }
      std::size_t start = 0;
      for (std::size_t i = 0; i < p.text.size();) {
        const added_token* hit = nullptr;
        for (const auto* a : by_first[static_cast<unsigned char>(p.text[i])])
          if (p.text.substr(i).starts_with(a->content)) {
            hit = a;
            break;
          }
        if (hit == nullptr) {
          ++i;
          continue;
        }
        if (start < i)
          next.push_back({p.text.substr(start, i - start), std::nullopt});
        next.push_back({{}, hit->id});
        i += hit->content.size();
        start = i;
      }
      if (start < p.text.size())
        next.push_back({p.text.substr(start), std::nullopt});
    }
    parts = std::move(next);
  }
  std::vector<token_id> out;
  for (const auto& p : parts) {
    if (p.id)
      out.push_back(*p.id);
    else
      impl_->encode_text(p.text, out);
  }
  return out;
}

std::string tokenizer::decode(std::span<const token_id> ids) const {
  std::string raw;
  for (const token_id id : ids)
    raw += token_bytes(id);
  std::string out;
  out.reserve(raw.size());
  utf8::append_lossy(out, raw);
  return out;
}

std::string_view tokenizer::token_bytes(token_id id) const noexcept {
  if (!contains(id))
    return {};
  const auto i = static_cast<std::size_t>(id);
  return std::string_view{impl_->arena}.substr(impl_->offsets[i], impl_->offsets[i + 1] - impl_->offsets[i]);
}

bool tokenizer::contains(token_id id) const noexcept {
  return id >= 0 && static_cast<std::size_t>(id) < impl_->known.size() && impl_->known[static_cast<std::size_t>(id)] != 0;
}

std::optional<token_id> tokenizer::special_id(std::string_view content) const {
  auto it = impl_->added_by_content.find(std::string{content});
  if (it == impl_->added_by_content.end())
    return std::nullopt;
  return it->second;
}

const tokenizer::added_token* tokenizer::find_added(token_id id) const noexcept {
  auto it = impl_->added_by_id.find(id);
  return it == impl_->added_by_id.end() ? nullptr : &impl_->added[it->second];
}

std::size_t tokenizer::vocab_size() const noexcept {
  return impl_->known.size();
}

} // namespace deepinfer::recipe
