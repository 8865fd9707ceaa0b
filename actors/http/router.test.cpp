#include "actors/http/router.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::actors::http::router;

namespace {

router::handler tagged(int* hit, int tag) {
  return [hit, tag](auto, auto) { *hit = tag; };
}

} // namespace

BOOST_AUTO_TEST_SUITE(router_suite)

BOOST_AUTO_TEST_CASE(exact_beats_prefix_and_longer_prefix_beats_shorter) {
  int hit = 0;
  router r;
  r.add("GET", "/v1/*", tagged(&hit, 1));
  r.add("GET", "/v1/models/*", tagged(&hit, 2));
  r.add("GET", "/v1/models", tagged(&hit, 3));
  auto run = [&](std::string_view path) {
    auto m = r.find("GET", path);
    BOOST_REQUIRE(m.result == router::outcome::found);
    (*m.fn)({}, nullptr);
    return std::pair{hit, m.route};
  };
  BOOST_TEST(run("/v1/models").first == 3);
  BOOST_TEST(run("/v1/models/abc").first == 2);
  BOOST_TEST(run("/v1/models/abc").second == "/v1/models/*");
  BOOST_TEST(run("/v1/chat/completions").first == 1);
  BOOST_TEST((r.find("GET", "/v1").result == router::outcome::not_found)); // a prefix needs one more segment
  BOOST_TEST((r.find("GET", "/v2/models").result == router::outcome::not_found));
}

BOOST_AUTO_TEST_CASE(known_path_with_other_method_lists_allowed_methods) {
  int hit = 0;
  router r;
  r.add("GET", "/health", tagged(&hit, 1));
  r.add("HEAD", "/health", tagged(&hit, 2));
  r.add("GET", "/health", tagged(&hit, 3)); // replaces the first
  auto m = r.find("POST", "/health");
  BOOST_TEST((m.result == router::outcome::method_not_allowed));
  BOOST_TEST(m.allow == "GET, HEAD");
  auto g = r.find("GET", "/health");
  (*g.fn)({}, nullptr);
  BOOST_TEST(hit == 3);
}

BOOST_AUTO_TEST_CASE(head_finds_the_get_route_and_get_routes_allow_head) {
  int hit = 0;
  router r;
  r.add("GET", "/v1/models", tagged(&hit, 1));
  r.add("POST", "/v1/chat/completions", tagged(&hit, 2));
  auto h = r.find("HEAD", "/v1/models");
  BOOST_TEST_REQUIRE((h.result == router::outcome::found));
  (*h.fn)({}, nullptr);
  BOOST_TEST(hit == 1);
  BOOST_TEST(r.find("DELETE", "/v1/models").allow == "GET, HEAD");
  auto post = r.find("HEAD", "/v1/chat/completions");
  BOOST_TEST((post.result == router::outcome::method_not_allowed));
  BOOST_TEST(post.allow == "POST");
}

BOOST_AUTO_TEST_CASE(error_formats_cover_the_path_a_prefix_pattern_is_under) {
  router r;
  r.set_error_format("/v1/messages/*", [](unsigned, std::string_view, std::string_view) { return std::string{"A"}; });
  for (auto path : {"/v1/messages", "/v1/messages/", "/v1/messages/count_tokens", "/v1/messages/a/b"})
    BOOST_TEST(r.error_body(path, 404, "m", "c") == "A", path);
  for (auto path : {"/v1/messagesx", "/v1/message", "/v1/chat/completions", ""})
    BOOST_TEST(r.error_body(path, 404, "m", "c").find("\"error\"") != std::string::npos, path); // OpenAI's
}

BOOST_AUTO_TEST_SUITE_END()
