#include "recipe/tokenizer/tokenizer_impl.hpp"

#include "recipe/tokenizer/utf8.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

namespace deepinfer::recipe {

using json = nlohmann::json;

char32_t byte_level_char(unsigned char b) noexcept {
  // Printable Latin-1 stands for itself; the other 68 bytes map to U+0100.. in byte order.
  if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE))
    return b;
  char32_t n = 0;
  for (unsigned c = 0; c < b; ++c)
    if (!((c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE)))
      ++n;
  return 0x100 + n;
}

namespace {

// The pre-tokenizer this implementation reproduces (tokenizer-reference.md §2).
const char* const expected_pre_tokenizer = R"({"type":"Sequence","pretokenizers":[
  {"type":"Split","pattern":{"Regex":"\\p{N}{1,3}"},"behavior":"Isolated","invert":false},
  {"type":"Split","pattern":{"Regex":"[一-龥぀-ゟ゠-ヿ]+"},"behavior":"Isolated","invert":false},
  {"type":"Split","pattern":{"Regex":"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},
  {"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]})";

struct load_error {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw load_error{(path.empty() ? std::string{"(document)"} : path) + ": " + what};
}

const json& member(const json& obj, const std::string& path, const char* key) {
  if (!obj.is_object())
    fail(path, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end())
    fail(path + "/" + key, "missing");
  return *it;
}

// The JSON pointer of the first place where `actual` differs from `expected`.
std::string first_difference(const json& expected, const json& actual) {
  const json patch = json::diff(expected, actual);
  return patch.empty() ? std::string{} : patch[0].value("path", std::string{});
}

std::string escape_pointer(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::unique_ptr<tokenizer::impl> parse(std::string_view text, const tokenizer::config& cfg) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    fail("", std::string{"not JSON: "} + e.what());
  }
  if (!doc.is_object())
    fail("", "expected an object");
  // 1. the parts that must be exactly what the hand-written code reproduces
  const json& model = member(doc, "", "model");
  if (member(model, "/model", "type") != "BPE")
    fail("/model/type", "only BPE is supported");
  for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(key) && !model[key].is_null() && model[key] != "")
      fail(std::string{"/model/"} + key, "unsupported value");
  for (const char* key : {"fuse_unk", "byte_fallback", "ignore_merges"})
    if (model.contains(key) && model[key] != false)
      fail(std::string{"/model/"} + key, "only false is supported");
  if (doc.contains("normalizer") && !doc["normalizer"].is_null() &&
      doc["normalizer"] != json::parse(R"({"type":"Sequence","normalizers":[]})"))
    fail("/normalizer", "only an empty normalizer is supported");
  const json want_pre = json::parse(expected_pre_tokenizer);
  const json& pre = member(doc, "", "pre_tokenizer");
  if (pre != want_pre)
    fail("/pre_tokenizer" + first_difference(want_pre, pre), "unsupported pre-tokenizer (expected DeepSeek's)");

  auto p = std::make_unique<tokenizer::impl>();
  p->cfg = cfg;
  // 2. vocabulary: byte-level strings -> raw bytes
  const json& vocab = member(model, "/model", "vocab");
  if (!vocab.is_object())
    fail("/model/vocab", "expected an object");
  int char_to_byte[0x144];
  std::fill(std::begin(char_to_byte), std::end(char_to_byte), -1);
  for (int b = 0; b < 256; ++b)
    char_to_byte[byte_level_char(static_cast<unsigned char>(b))] = b;
  std::vector<std::string> bytes_of;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const std::string path = "/model/vocab/" + escape_pointer(it.key());
    if (!it.value().is_number_integer() || it.value().get<std::int64_t>() < 0 || it.value().get<std::int64_t>() > 1'000'000)
      fail(path, "expected a token id (integer 0..1000000)");
    const auto id = it.value().get<std::size_t>();
    std::string raw;
    const std::string& s = it.key();
    for (std::size_t pos = 0; pos < s.size();) {
      const auto st = utf8::next(s, pos);
      if (st.st != utf8::status::valid || st.cp >= 0x144 || char_to_byte[st.cp] < 0) {
        // HF's ByteLevel decoder gives such a token (e.g. the BOS string) as its UTF-8 text.
        raw = s;
        break;
      }
      raw += static_cast<char>(char_to_byte[st.cp]);
      pos += st.len;
    }
    if (bytes_of.size() <= id) {
      bytes_of.resize(id + 1);
      p->known.resize(id + 1, 0);
    }
    if (p->known[id])
      fail(path, "duplicate id " + std::to_string(id));
    p->known[id] = 1;
    bytes_of[id] = std::move(raw);
  }
  token_id byte_ids[256];
  for (int b = 0; b < 256; ++b) {
    const char32_t c = byte_level_char(static_cast<unsigned char>(b));
    std::string utf;
    if (c < 0x80)
      utf += static_cast<char>(c);
    else {
      utf += static_cast<char>(0xC0 | (c >> 6));
      utf += static_cast<char>(0x80 | (c & 0x3F));
    }
    auto it = vocab.find(utf);
    if (it == vocab.end())
      fail("/model/vocab", "no token for byte " + std::to_string(b));
    byte_ids[b] = it.value().get<token_id>();
  }
  // 3. merges: "left right" strings or [left, right] pairs, in rank order
  const json& merges = member(model, "/model", "merges");
  if (!merges.is_array())
    fail("/model/merges", "expected an array");
  std::vector<bpe_model::merge> rules;
  rules.reserve(merges.size());
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string path = "/model/merges/" + std::to_string(r);
    std::string left, right;
    const json& m = merges[r];
    if (m.is_string()) {
      const auto& s = m.get_ref<const std::string&>();
      const auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail(path, "expected \"left right\"");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      fail(path, "expected \"left right\" or [left, right]");
    }
    auto a = vocab.find(left), b = vocab.find(right), c = vocab.find(left + right);
    if (a == vocab.end() || b == vocab.end())
      fail(path, "merge of a token not in the vocabulary");
    if (c == vocab.end())
      fail(path, "merged token not in the vocabulary");
    rules.push_back({a.value().get<token_id>(), b.value().get<token_id>(), c.value().get<token_id>()});
  }
  p->bpe = std::make_unique<bpe_model>(byte_ids, rules);
  // 4. added tokens
  const json& added = member(doc, "", "added_tokens");
  if (!added.is_array())
    fail("/added_tokens", "expected an array");
  std::vector<std::string> contents = std::move(bytes_of);
  for (std::size_t i = 0; i < added.size(); ++i) {
    const std::string path = "/added_tokens/" + std::to_string(i);
    const json& a = added[i];
    const json& id = member(a, path, "id");
    const json& content = member(a, path, "content");
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > 1'000'000)
      fail(path + "/id", "expected a token id (integer 0..1000000)");
    if (!content.is_string() || content.get_ref<const std::string&>().empty())
      fail(path + "/content", "expected a non-empty string");
    for (const char* key : {"lstrip", "rstrip", "single_word"})
      if (a.contains(key) && a[key] != false)
        fail(path + "/" + key, "only false is supported");
    tokenizer::added_token t{id.get<token_id>(), content.get<std::string>(), a.value("special", false),
                             a.value("normalized", false)};
    const auto uid = static_cast<std::size_t>(t.id);
    if (contents.size() <= uid) {
      contents.resize(uid + 1);
      p->known.resize(uid + 1, 0);
    }
    p->known[uid] = 1;
    contents[uid] = t.content;
    p->added_by_content[t.content] = t.id;
    p->added_by_id[t.id] = p->added.size();
    p->added.push_back(std::move(t));
  }
  // 5. one byte arena for token_bytes
  p->offsets.reserve(contents.size() + 1);
  for (const auto& s : contents) {
    p->offsets.push_back(static_cast<std::uint32_t>(p->arena.size()));
    p->arena += s;
  }
  p->offsets.push_back(static_cast<std::uint32_t>(p->arena.size()));
  // 6. per byte value, the longest token holding it: what bounds the tokens of a text from below
  std::array<std::size_t, 256> longest{};
  for (const auto& s : contents)
    for (const char c : s)
      longest[static_cast<unsigned char>(c)] = std::max(longest[static_cast<unsigned char>(c)], s.size());
  for (std::size_t b = 0; b < 256; ++b)
    p->byte_weight[b] = static_cast<std::uint32_t>(tokenizer::impl::weight_one / std::max<std::size_t>(longest[b], 1));
  return p;
}

} // namespace

tokenizer_load_result tokenizer::load_json(std::string_view json_text, const config& cfg) {
  static std::atomic<std::uint64_t> instances{0};
  try {
    auto p = parse(json_text, cfg);
    std::size_t threads = cfg.threads != 0 ? cfg.threads : std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), 4);
    if (threads > 1)
      p->pool = std::make_unique<thread_pool>(threads - 1);
    p->instance = ++instances;
    return {std::shared_ptr<const tokenizer>(new tokenizer(std::move(p))), {}};
  } catch (const load_error& e) {
    return {nullptr, e.message};
  } catch (const json::exception& e) {
    return {nullptr, std::string{"(json): "} + e.what()};
  }
}

tokenizer_load_result tokenizer::load(const std::filesystem::path& path, const config& cfg) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return {nullptr, path.string() + ": cannot open"};
  std::ostringstream buf;
  buf << in.rdbuf();
  auto r = load_json(buf.str(), cfg);
  if (!r)
    r.error = path.string() + ": " + r.error;
  return r;
}

tokenizer_load_result tokenizer::load(const std::filesystem::path& path) {
  return load(path, config{});
}

std::optional<std::filesystem::path> default_tokenizer_path(const std::filesystem::path& cache_dir,
                                                            std::string_view template_name) {
  const char* file = template_name == "dsv41"  ? "tokenizer_v41.json"
                     : template_name == "dsv32" ? "tokenizer_v32.json"
                     : template_name == "dsv3"  ? "tokenizer_v3.json"
                                                : nullptr;
  if (file == nullptr)
    return std::nullopt;
  return cache_dir / "tokenizer" / file;
}

} // namespace deepinfer::recipe
