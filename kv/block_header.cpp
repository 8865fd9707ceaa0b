#include "kv/block_header.hpp"

#include <cstring>

#include <xxhash.h>

namespace deepinfer::kv {

namespace {

constexpr char magic[8] = {'D', 'I', 'K', 'V', 'B', 'L', 'K', '1'};
constexpr std::size_t checked_bytes = 88;

template <class T>
void put(std::byte* out, std::size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}

template <class T>
T get(const std::byte* in, std::size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

uint64_t checksum(std::span<const std::byte> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

} // namespace

block_header block_header::make(const block_key& key, model_fingerprint fp, traffic_class cls,
                                int64_t created_ms, std::span<const std::byte> payload) {
  block_header h;
  h.cls = cls;
  h.payload_length = payload.size();
  h.created_ms = created_ms;
  h.fingerprint = fp;
  h.key = key;
  h.payload_checksum = checksum(payload);
  return h;
}

std::array<std::byte, block_header::size> block_header::encode() const {
  std::array<std::byte, size> out{};
  std::memcpy(out.data(), magic, sizeof(magic));
  put(out.data(), 8, version);
  put(out.data(), 12, static_cast<uint8_t>(cls));
  put(out.data(), 16, payload_length);
  put(out.data(), 24, created_ms);
  put(out.data(), 32, fingerprint.value.lo);
  put(out.data(), 40, fingerprint.value.hi);
  put(out.data(), 48, key.lo);
  put(out.data(), 56, key.hi);
  put(out.data(), 64, payload_checksum);
  put(out.data(), checked_bytes, checksum(std::span{out}.first(checked_bytes)));
  return out;
}

std::optional<block_header> block_header::decode(std::span<const std::byte> bytes) {
  if (bytes.size() < size || std::memcmp(bytes.data(), magic, sizeof(magic)) != 0)
    return std::nullopt;
  const auto* in = bytes.data();
  if (get<uint64_t>(in, checked_bytes) != checksum(bytes.first(checked_bytes)))
    return std::nullopt;
  block_header h;
  h.version = get<uint32_t>(in, 8);
  if (h.version != current_version)
    return std::nullopt;
  const auto cls = get<uint8_t>(in, 12);
  if (cls > static_cast<uint8_t>(traffic_class::chatbot))
    return std::nullopt;
  h.cls = static_cast<traffic_class>(cls);
  h.payload_length = get<uint64_t>(in, 16);
  h.created_ms = get<int64_t>(in, 24);
  h.fingerprint.value = block_key{get<uint64_t>(in, 32), get<uint64_t>(in, 40)};
  h.key = block_key{get<uint64_t>(in, 48), get<uint64_t>(in, 56)};
  h.payload_checksum = get<uint64_t>(in, 64);
  return h;
}

bool block_header::matches(std::span<const std::byte> payload) const {
  return payload.size() == payload_length && checksum(payload) == payload_checksum;
}

} // namespace deepinfer::kv
