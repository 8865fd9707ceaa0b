#include "recipe/tokenizer/tokenizer.hpp"

#include "recipe/tokenizer/pre_tokenizer.hpp"
#include "recipe/tokenizer/tokenizer_impl.hpp"
#include "recipe/tokenizer/utf8.hpp"

#include <algorithm>
#include <cstring>
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

// Per-thread scratch and piece cache, reset when the thread switches to another tokenizer.
struct worker_state {
  std::uint64_t owner = 0;
  pre_tokenizer pre;
  std::vector<std::uint32_t> ends;
  std::unordered_map<std::string, std::vector<token_id>, string_hash, std::equal_to<>> cache;
};

worker_state& local_state(std::uint64_t instance) {
  thread_local worker_state state;
  if (state.owner != instance) {
    state.cache.clear();
    state.owner = instance;
  }
  return state;
}

// The end of the chunk that starts at `from`: about `target` bytes on, at a safe cut.
std::size_t next_cut(std::string_view text, std::size_t from, std::size_t target) {
  if (text.size() - from <= target + target / 2)
    return text.size();
  for (std::size_t p = from + target; p < text.size();) {
    const void* nl = std::memchr(text.data() + p, '\n', text.size() - p);
    if (nl == nullptr)
      break;
    p = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
    if (pre_tokenizer::is_safe_cut(text, p))
      return p;
  }
  return text.size();
}

} // namespace

void tokenizer::impl::encode_text(std::string_view text, std::vector<token_id>& out) const {
  worker_state& w = local_state(instance);
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t to = next_cut(text, from, chunk_bytes);
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

std::vector<token_id> tokenizer::encode(std::string_view text) const {
  std::vector<token_id> out;
  out.reserve(text.size() / 3 + 8);
  impl_->encode_text(text, out);
  return out;
}

std::vector<token_id> tokenizer::encode(const prompt_segments& segments) const {
  // 1. cut the text into units (whole segments, long ones at safe line breaks)
  std::size_t total = 0;
  for (const auto& s : segments)
    if (!s.is_special())
      total += s.text.size();
  const std::size_t workers = impl_->pool ? impl_->pool->concurrency() : 1;
  const bool parallel = workers > 1 && total >= impl_->cfg.parallel_min_bytes;
  const std::size_t target = parallel ? std::max<std::size_t>(4096, total / (workers * 4)) : total + 1;
  struct unit {
    std::string_view text;
    std::optional<token_id> special;
  };
  std::vector<unit> units;
  for (const auto& s : segments) {
    if (s.is_special()) {
      units.push_back({{}, s.special_id});
      continue;
    }
    const std::string_view t = s.text;
    for (std::size_t from = 0; from < t.size();) {
      const std::size_t to = next_cut(t, from, target);
      units.push_back({t.substr(from, to - from), std::nullopt});
      from = to;
    }
  }
  std::vector<token_id> out;
  out.reserve(total / 3 + segments.size() + 8);
  if (!parallel) {
    for (const auto& u : units) {
      if (u.special)
        out.push_back(*u.special);
      else
        impl_->encode_text(u.text, out);
    }
    return out;
  }
  // 2. encode the units on the pool (or here, if another call holds it) and concatenate in order
  std::vector<std::vector<token_id>> parts(units.size());
  const std::function<void(std::size_t)> job = [&](std::size_t i) {
    if (!units[i].special)
      impl_->encode_text(units[i].text, parts[i]);
  };
  if (!impl_->pool->try_run(units.size(), job))
    for (std::size_t i = 0; i < units.size(); ++i)
      job(i);
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (units[i].special)
      out.push_back(*units[i].special);
    else
      out.insert(out.end(), parts[i].begin(), parts[i].end());
  }
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
