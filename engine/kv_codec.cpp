#include "engine/kv_codec.hpp"

#include <cstring>

namespace deepinfer::engine {

namespace {

constexpr uint16_t version = 1;
enum : uint16_t { kind_block = 1, kind_window = 2 };

struct header {
  char magic[4] = {'D', 'I', 'K', 'V'};
  uint16_t version = 0;
  uint16_t kind = 0;
  char fingerprint[16] = {};
  int64_t a = 0, b = 0, c = 0, d = 0, e = 0; // geometry, meaning depends on kind
};
static_assert(sizeof(header) == 64);

header make_header(uint16_t kind, const std::string& fp) {
  header h;
  h.version = version;
  h.kind = kind;
  std::memcpy(h.fingerprint, fp.data(), std::min<std::size_t>(fp.size(), 16));
  return h;
}

std::string check_header(std::span<const std::byte> bytes, uint16_t kind, const std::string& fp,
                         header& h) {
  if (bytes.size() < sizeof(header))
    return "kv buffer shorter than its header";
  std::memcpy(&h, bytes.data(), sizeof(header));
  if (std::memcmp(h.magic, "DIKV", 4) != 0)
    return "not a kv buffer (bad magic)";
  if (h.version != version)
    return "kv buffer version " + std::to_string(h.version) + " is not supported";
  if (h.kind != kind)
    return "kv buffer holds another kind of data";
  if (std::memcmp(h.fingerprint, make_header(kind, fp).fingerprint, 16) != 0)
    return "kv buffer is from another model (fingerprint " + std::string(h.fingerprint, 16) + ")";
  return {};
}

} // namespace

std::vector<std::byte> kv_codec::encode_block(const float* rows, int64_t tokens,
                                              int64_t floats_per_token,
                                              const std::string& fingerprint) {
  header h = make_header(kind_block, fingerprint);
  h.a = tokens;
  h.b = floats_per_token;
  const auto payload = static_cast<std::size_t>(tokens * floats_per_token) * sizeof(float);
  std::vector<std::byte> out(sizeof(header) + payload);
  std::memcpy(out.data(), &h, sizeof(header));
  std::memcpy(out.data() + sizeof(header), rows, payload);
  return out;
}

std::size_t kv_codec::block_bytes(int64_t tokens, int64_t floats_per_token) {
  return sizeof(header) + static_cast<std::size_t>(tokens * floats_per_token) * sizeof(float);
}

void kv_codec::write_block_header(std::span<std::byte> out, int64_t tokens,
                                  int64_t floats_per_token, const std::string& fingerprint) {
  header h = make_header(kind_block, fingerprint);
  h.a = tokens;
  h.b = floats_per_token;
  std::memcpy(out.data(), &h, sizeof(header));
}

std::string kv_codec::block_rows(std::span<const std::byte> bytes, int64_t tokens,
                                 int64_t floats_per_token, const std::string& fingerprint,
                                 std::span<const std::byte>& rows) {
  header h;
  if (auto err = check_header(bytes, kind_block, fingerprint, h); !err.empty())
    return err;
  if (h.a != tokens || h.b != floats_per_token || bytes.size() != block_bytes(tokens, floats_per_token))
    return "kv block geometry does not match this model";
  rows = bytes.subspan(sizeof(header));
  return {};
}

std::string kv_codec::decode_block(std::span<const std::byte> bytes, int64_t tokens,
                                   int64_t floats_per_token, const std::string& fingerprint,
                                   float* rows) {
  header h;
  if (auto err = check_header(bytes, kind_block, fingerprint, h); !err.empty())
    return err;
  const auto payload = static_cast<std::size_t>(tokens * floats_per_token) * sizeof(float);
  if (h.a != tokens || h.b != floats_per_token || bytes.size() != sizeof(header) + payload)
    return "kv block geometry does not match this model";
  std::memcpy(rows, bytes.data() + sizeof(header), payload);
  return {};
}

std::vector<std::byte> kv_codec::encode_window(std::span<const swa_ring> rings, int64_t lo,
                                               const std::string& fingerprint) {
  header h = make_header(kind_window, fingerprint);
  const int64_t width = rings.empty() ? 0 : rings[0].geometry().width;
  const int64_t end = rings.empty() ? 0 : rings[0].end();
  const int64_t count = rings.empty() ? 0 : end - rings[0].begin();
  h.a = static_cast<int64_t>(rings.size());
  h.b = width;
  h.c = end;
  h.d = count;
  h.e = lo;
  const auto row = static_cast<std::size_t>(width) * sizeof(float);
  std::vector<std::byte> out(sizeof(header) + rings.size() * 2 * count * row);
  std::memcpy(out.data(), &h, sizeof(header));
  auto* p = out.data() + sizeof(header);
  for (const auto& r : rings) {
    for (int64_t pos = end - count; pos < end; ++pos, p += row)
      std::memcpy(p, r.k(pos), row);
    for (int64_t pos = end - count; pos < end; ++pos, p += row)
      std::memcpy(p, r.v(pos), row);
  }
  return out;
}

std::string kv_codec::decode_window(std::span<const std::byte> bytes,
                                    const std::string& fingerprint, std::span<swa_ring> rings,
                                    window_info& info) {
  header h;
  if (auto err = check_header(bytes, kind_window, fingerprint, h); !err.empty())
    return err;
  const int64_t width = rings.empty() ? 0 : rings[0].geometry().width;
  const auto row = static_cast<std::size_t>(width) * sizeof(float);
  if (h.a != static_cast<int64_t>(rings.size()) || h.b != width || h.d < 0 || h.d > h.c ||
      (!rings.empty() && h.d > rings[0].geometry().slots) ||
      bytes.size() != sizeof(header) + rings.size() * 2 * static_cast<std::size_t>(h.d) * row)
    return "kv window geometry does not match this model";
  info = {h.c, h.d, h.e};
  const auto* p = bytes.data() + sizeof(header);
  std::vector<float> k(static_cast<std::size_t>(h.d * width)), v(k.size());
  for (auto& r : rings) {
    std::memcpy(k.data(), p, k.size() * sizeof(float));
    p += k.size() * sizeof(float);
    std::memcpy(v.data(), p, v.size() * sizeof(float));
    p += v.size() * sizeof(float);
    r.reset(h.c - h.d);
    for (int64_t i = 0; i < h.d; ++i)
      r.push(h.c - h.d + i, k.data() + i * width, v.data() + i * width);
  }
  return {};
}

std::size_t kv_codec::window_bytes(std::span<const std::byte> bytes) {
  header h;
  if (bytes.size() < sizeof(header))
    return 0;
  std::memcpy(&h, bytes.data(), sizeof(header));
  if (std::memcmp(h.magic, "DIKV", 4) != 0 || h.kind != kind_window || h.a < 0 || h.b < 0 ||
      h.d < 0 || h.a > (1 << 16) || h.b > (1 << 24) || h.d > (1 << 24))
    return 0;
  return sizeof(header) + static_cast<std::size_t>(h.a * 2 * h.d * h.b) * sizeof(float);
}

} // namespace deepinfer::engine
