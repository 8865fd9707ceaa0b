#include "recipe/base/host_port.hpp"

#include <boost/test/unit_test.hpp>

using namespace deepinfer;

BOOST_AUTO_TEST_SUITE(host_port_suite)

BOOST_AUTO_TEST_CASE(endpoints_parse_and_format) {
  auto v4 = parse_host_port("10.0.0.2:7100");
  BOOST_REQUIRE(v4.has_value());
  BOOST_TEST(v4->host == "10.0.0.2");
  BOOST_TEST(v4->port == 7100);
  auto v6 = parse_host_port("[fe80::1]:7100");
  BOOST_REQUIRE(v6.has_value());
  BOOST_TEST(v6->host == "fe80::1");
  BOOST_TEST(parse_host_port("[::1]:80")->host == "::1");
  BOOST_TEST(format_host_port("fe80::1", 7100) == "[fe80::1]:7100");
  BOOST_TEST(format_host_port("10.0.0.2", 7100) == "10.0.0.2:7100");
}

BOOST_AUTO_TEST_CASE(malformed_endpoints_and_bad_ports_are_refused) {
  for (auto bad : {"", "nohost", "10.0.0.2", ":7100", ":80", "10.0.0.2:", "10.0.0.2:0", "h:0", "10.0.0.2:70000",
                   "h:70000", "10.0.0.2:71x", "fe80::1:7100", "[]:7100", "[fe80::1:7100"})
    BOOST_TEST(!parse_host_port(bad).has_value(), "accepted '" << bad << "'");
}

BOOST_AUTO_TEST_SUITE_END()
