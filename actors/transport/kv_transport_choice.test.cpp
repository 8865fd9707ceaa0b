#include "actors/transport/kv_transport_choice.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer::actors;

namespace {

/// Every precondition of RDMA met; each case breaks one.
kv_transport_facts rdma_ready() {
  kv_transport_facts f;
  f.rdma_compiled = true;
  f.rdma_devices = 1;
  f.rdma_listening = true;
  f.peer_rdma = true;
  return f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_transport_choice_tests)

BOOST_AUTO_TEST_CASE(rdma_only_when_every_precondition_holds) {
  BOOST_TEST((decide_kv_transport(rdma_ready()) == kv_transport_kind::rdma));
  auto f = rdma_ready();
  f.mode = kv_transport_mode::rdma;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::rdma));

  f = rdma_ready();
  f.rdma_compiled = false;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::caf_message));
  f = rdma_ready();
  f.rdma_devices = 0;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::caf_message));
  f = rdma_ready();
  f.rdma_listening = false;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::caf_message));
  f = rdma_ready();
  f.peer_rdma = false;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::caf_message));
  f = rdma_ready();
  f.mode = kv_transport_mode::caf_message;
  BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::caf_message));
}

BOOST_AUTO_TEST_CASE(same_process_always_hands_over_in_process) {
  for (auto mode : {kv_transport_mode::automatic, kv_transport_mode::caf_message, kv_transport_mode::rdma}) {
    auto f = rdma_ready();
    f.mode = mode;
    f.same_process = true;
    BOOST_TEST((decide_kv_transport(f) == kv_transport_kind::in_process));
  }
  kv_transport_facts nothing;
  BOOST_TEST((decide_kv_transport(nothing) == kv_transport_kind::caf_message));
  nothing.same_process = true;
  BOOST_TEST((decide_kv_transport(nothing) == kv_transport_kind::in_process));
}

BOOST_AUTO_TEST_CASE(modes_parse_by_their_manifest_names) {
  for (auto mode : {kv_transport_mode::automatic, kv_transport_mode::caf_message, kv_transport_mode::rdma})
    BOOST_TEST((parse_kv_transport_mode(to_string(mode)) == mode));
  BOOST_TEST(std::string{to_string(kv_transport_mode::automatic)} == "auto");
  for (auto bad : {"", "automatic", "RDMA", "tcp", "caf"})
    BOOST_TEST(!parse_kv_transport_mode(bad).has_value(), "accepted '" << bad << "'");
}

BOOST_AUTO_TEST_SUITE_END()
