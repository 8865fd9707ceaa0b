#include "kv/rdma/rdma_descriptor.hpp"

#include <boost/test/unit_test.hpp>

#include <xxhash.h>

using namespace deepinfer::kv;

namespace {

rdma_descriptor sample() {
  rdma_descriptor d;
  d.id = 0x1122334455667788ull;
  d.endpoint = "10.0.0.2:7100";
  d.ticket = 42;
  d.address = 0x00007f12deadbe00ull;
  d.rkey = 0xabcdef01u;
  d.length = 3'000'000'001ull;
  d.checksum = 0x0102030405060708ull;
  return d;
}

/// Re-seals a descriptor whose body a test edited (so only the edit is judged).
void reseal(std::vector<uint8_t>& bytes) {
  auto n = bytes.size() - sizeof(uint64_t);
  uint64_t sum = XXH3_64bits(bytes.data(), n);
  for (std::size_t i = 0; i < sizeof sum; ++i)
    bytes[n + i] = static_cast<uint8_t>(sum >> (8 * i));
}

} // namespace

BOOST_AUTO_TEST_SUITE(rdma_descriptor_tests)

BOOST_AUTO_TEST_CASE(round_trips_every_field) {
  for (auto ep : {"10.0.0.2:7100", "[fe80::1]:65535", "node-a.cluster:1"}) {
    auto d = sample();
    d.endpoint = ep;
    std::string err;
    auto got = decode_rdma_descriptor(encode_rdma_descriptor(d), &err);
    BOOST_REQUIRE_MESSAGE(got.has_value(), err);
    BOOST_TEST(got->id == d.id);
    BOOST_TEST(got->endpoint == d.endpoint);
    BOOST_TEST(got->ticket == d.ticket);
    BOOST_TEST(got->address == d.address);
    BOOST_TEST(got->rkey == d.rkey);
    BOOST_TEST(got->length == d.length);
    BOOST_TEST(got->checksum == d.checksum);
  }
}

BOOST_AUTO_TEST_CASE(rejects_every_truncation_and_every_flipped_bit) {
  auto bytes = encode_rdma_descriptor(sample());
  std::string err;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::span<const uint8_t> cut{bytes.data(), n};
    BOOST_TEST(!decode_rdma_descriptor(cut, &err).has_value(), "accepted a descriptor cut to " << n << " bytes");
  }
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = bytes;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      err.clear();
      BOOST_TEST(!decode_rdma_descriptor(bad, &err).has_value(), "accepted a flip of bit " << bit << " of byte " << i);
      BOOST_TEST(!err.empty());
    }
  auto longer = bytes;
  longer.push_back(0);
  BOOST_TEST(!decode_rdma_descriptor(longer, &err).has_value());
}

BOOST_AUTO_TEST_CASE(rejects_another_version_trailing_bytes_and_bad_endpoints) {
  std::string err;
  auto bytes = encode_rdma_descriptor(sample());
  auto other = bytes;
  other[4] = 2;  // version field, little-endian, right after the magic
  reseal(other);
  BOOST_TEST(!decode_rdma_descriptor(other, &err).has_value());
  BOOST_TEST(err.find("version 2") != std::string::npos);

  auto padded = bytes;
  padded.insert(padded.end() - sizeof(uint64_t), uint8_t{0});
  reseal(padded);
  BOOST_TEST(!decode_rdma_descriptor(padded, &err).has_value());
  BOOST_TEST(err.find("malformed") != std::string::npos);

  auto d = sample();
  d.endpoint = "no-port";
  BOOST_TEST(!decode_rdma_descriptor(encode_rdma_descriptor(d), &err).has_value());
  BOOST_TEST(err.find("endpoint") != std::string::npos);

  std::vector<uint8_t> foreign(64, 0xab);
  reseal(foreign);
  BOOST_TEST(!decode_rdma_descriptor(foreign, &err).has_value());
  BOOST_TEST(err.find("not an RDMA KV descriptor") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
