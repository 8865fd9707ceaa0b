#include "actors/transport/kv_transport.hpp"

#include "actors/errors.hpp"
#include "actors/transport/receive_failure.test.hpp"

#include <thread>

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;
using deepinfer::actors::testing::failure;

namespace {

std::vector<std::byte> pattern(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((i * 131 + 7) & 0xff);
  return v;
}


} // namespace

BOOST_AUTO_TEST_SUITE(kv_transport_tests)

BOOST_AUTO_TEST_CASE(in_process_hands_over_the_same_buffer_once) {
  in_process_kv_transport t;
  auto bytes = pattern(1 << 16);
  const auto* data = bytes.data();
  kv_handoff h;
  std::string err;
  BOOST_REQUIRE(!t.send(42, std::move(bytes), h));
  BOOST_TEST((h.transport == kv_transport_kind::in_process));
  BOOST_TEST(h.packed.empty());  // only the ticket travels
  BOOST_TEST(t.parked() == 1u);
  auto got = t.receive(h);
  BOOST_REQUIRE(static_cast<bool>(got));
  BOOST_TEST(got->data() == data);  // no copy
  BOOST_TEST((*got == pattern(1 << 16)));
  BOOST_TEST(t.parked() == 0u);
  err = failure(t.receive(h), errc::kv_parcel_gone);  // a ticket is good once
  BOOST_TEST(err.find("gone") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(in_process_parcels_expire) {
  in_process_kv_transport t{std::chrono::milliseconds(0)};
  kv_handoff h1, h2;
  t.send(1, pattern(10), h1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  t.send(2, pattern(10), h2);  // sweeps the expired first parcel
  BOOST_TEST(t.parked() == 1u);
  failure(t.receive(h1), errc::kv_parcel_gone);
}

BOOST_AUTO_TEST_CASE(caf_message_round_trips_and_rejects_damage) {
  caf_message_kv_transport t;
  auto bytes = pattern(300'000);
  kv_handoff h;
  std::string err;
  BOOST_REQUIRE(!t.send(7, bytes, h));
  BOOST_TEST((h.transport == kv_transport_kind::caf_message));
  BOOST_TEST(h.packed.size() > bytes.size());
  auto copy = h;
  auto got = t.receive(copy);
  BOOST_REQUIRE(static_cast<bool>(got));
  BOOST_TEST((*got == bytes));

  auto flipped = h;
  flipped.packed[flipped.packed.size() / 2] ^= 0x01;
  err = failure(t.receive(flipped), errc::kv_package_corrupt);
  BOOST_TEST(err.find("checksum") != std::string::npos);

  auto cut = h;
  cut.packed.resize(cut.packed.size() / 2);
  err = failure(t.receive(cut), errc::kv_package_corrupt);

  auto other = h;
  other.id = 8;
  err = failure(t.receive(other), errc::kv_package_corrupt);
  BOOST_TEST(err.find("does not match") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(choice_follows_process_boundaries) {
  BOOST_TEST(std::string{choose_kv_transport(true).name()} == "in_process");
  BOOST_TEST(std::string{choose_kv_transport(false).name()} == "caf_message");
  BOOST_TEST(kv_transport_of(kv_transport_kind::caf_message) == &choose_kv_transport(false));
  BOOST_TEST(kv_transport_of(kv_transport_kind::in_process) == &choose_kv_transport(true));
}

BOOST_AUTO_TEST_CASE(without_a_device_rdma_is_refused_clearly_and_never_chosen,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) {
                       boost::test_tools::assertion_result r(rdma_device_count() == 0);
                       r.message() << "this machine has an RDMA device (the no-device refusal cannot be seen here)";
                       return r;
                     })) {
  // Forcing RDMA on a node without a device stops the node with what to do instead.
  auto err = configure_kv_transports(kv_transport_mode::rdma, "127.0.0.1", 0);
  BOOST_REQUIRE(err.has_value());
  BOOST_TEST(err->find("kv_transport = rdma") != std::string::npos, *err);
  BOOST_TEST(err->find("caf_message") != std::string::npos, *err);
  BOOST_TEST(!configure_kv_transports(kv_transport_mode::caf_message, "127.0.0.1", 0).has_value());
  BOOST_TEST(!configure_kv_transports(kv_transport_mode::automatic, "127.0.0.1", 0).has_value());
  BOOST_TEST(local_rdma_endpoint().empty());
  // A peer advertising RDMA changes nothing without a device (and a listener) here.
  BOOST_TEST(std::string{choose_kv_transport(false, true).name()} == "caf_message");
  BOOST_TEST(std::string{choose_kv_transport(true, true).name()} == "in_process");
#ifdef DEEPINFER_HAVE_RDMA
  // The decode side still knows the name: an RDMA handoff fails with a reason, not as unknown.
  BOOST_TEST(kv_transport_of(kv_transport_kind::rdma) != nullptr);
#else
  BOOST_TEST(kv_transport_of(kv_transport_kind::rdma) == nullptr);
#endif
}

BOOST_AUTO_TEST_SUITE_END()
