// A three-node cluster as real processes on loopback: SIGKILL and SIGSTOP one node and watch the
// controller notice, the others keep answering, and the node rejoin on the same port.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <boost/test/unit_test.hpp>

#include "tests/cluster/node_process.hpp"

using namespace deepinfer::tests;
using namespace std::chrono_literals;

namespace {

struct three_nodes {
  std::filesystem::path dir;
  std::string manifest;
  uint16_t http_n0 = free_port();
  uint16_t http_p0 = free_port();
  std::unique_ptr<node_process> n0, p0, d0;

  three_nodes() {
    dir = std::filesystem::temp_directory_path()
          / ("deepinfer-cluster-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(dir);
    manifest = (dir / "cluster.toml").string();
    std::ofstream out{manifest};
    out << "model = \"" << (dir / "model").string() << "\"\n"
        << "[kv]\nroot = \"" << (dir / "kv").string() << "\"\n"
        << "[caf]\nheartbeat_interval_ms = 250\nconnection_timeout_ms = 1500\n"
        << "[[nodes]]\nname = \"n0\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\nroles = [\"controller\", \"entrypoint\"]\nhttp = \"127.0.0.1:" << http_n0 << "\"\n"
        << "[[nodes]]\nname = \"p0\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\nroles = [\"prefill\", \"entrypoint\"]\nranks = 2\nhttp = \"127.0.0.1:" << http_p0 << "\"\n"
        << "[[nodes]]\nname = \"d0\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\nroles = [\"decode\"]\nranks = 2\n";
    out.close();
    n0 = start("n0");
    p0 = start("p0");
    d0 = start("d0");
    BOOST_REQUIRE_MESSAGE(wait_until([&] { return all_up(); }, eventually),
                          "cluster did not come up; n0 log:\n" + n0->log());
  }

  ~three_nodes() {
    n0.reset();
    p0.reset();
    d0.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  static int& counter() {
    static int n = 0;
    return n;
  }

  std::unique_ptr<node_process> start(const std::string& name) {
    return std::make_unique<node_process>(
      std::vector<std::string>{CAF_LAUNCH_PATH, "--manifest", manifest, "--node", name, "--no-serve"},
      (dir / (name + ".log")).string());
  }

  std::string metrics() {
    auto r = http_get(http_n0, "/metrics");
    return r && r->status == 200 ? r->body : std::string{};
  }

  bool up(const std::string& m, const std::string& node, const std::string& value) {
    return has_sample(m, "deepinfer_node_up{node=\"" + node + "\"", value);
  }

  bool all_up() {
    auto m = metrics();
    return up(m, "n0", "1") && up(m, "p0", "1") && up(m, "d0", "1");
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cluster)

BOOST_FIXTURE_TEST_CASE(sigkilled_node_is_marked_dead_within_two_seconds_and_rejoins, three_nodes) {
  d0->signal(SIGKILL);
  auto took = wait_until([&] { return up(metrics(), "d0", "0"); }, 2000ms);
  BOOST_REQUIRE_MESSAGE(took, "d0 not marked dead within 2 s; n0 log:\n" + n0->log());
  BOOST_TEST_MESSAGE("SIGKILL detected after " << took->count() << " ms");
  auto m = metrics();
  BOOST_TEST(has_sample(m, "deepinfer_instance_state{instance=\"d0/decode\"", "1"));
  BOOST_TEST(m.find("state=\"failed\"") != std::string::npos);
  // The others keep answering.
  BOOST_TEST(up(m, "p0", "1"));
  BOOST_TEST(http_get(http_n0, "/health")->status == 200u);
  BOOST_TEST(http_get(http_p0, "/health")->status == 200u);
  BOOST_TEST(http_get(http_p0, "/v1/models")->status == 200u);
  // A restarted node rejoins on the same port.
  d0->wait(1000ms);
  d0 = start("d0");
  BOOST_REQUIRE_MESSAGE(wait_until([&] { return up(metrics(), "d0", "1"); }, eventually),
                        "d0 did not rejoin; its log:\n" + d0->log());
  BOOST_TEST(has_sample(metrics(), "deepinfer_node_joins{node=\"d0\"}", "2"));
}

BOOST_FIXTURE_TEST_CASE(frozen_node_is_marked_dead_within_three_seconds, three_nodes) {
  d0->signal(SIGSTOP);
  auto took = wait_until([&] { return up(metrics(), "d0", "0"); }, 3000ms);
  BOOST_REQUIRE_MESSAGE(took, "frozen d0 not marked dead within 3 s; n0 log:\n" + n0->log());
  BOOST_TEST_MESSAGE("SIGSTOP detected after " << took->count() << " ms");
  BOOST_TEST(up(metrics(), "p0", "1"));
  BOOST_TEST(http_get(http_p0, "/health")->status == 200u);
  // Thawed, it finds its connection dropped, reconnects and registers again.
  d0->signal(SIGCONT);
  BOOST_REQUIRE_MESSAGE(wait_until([&] { return up(metrics(), "d0", "1"); }, eventually),
                        "thawed d0 did not rejoin; its log:\n" + d0->log());
  BOOST_TEST(has_sample(metrics(), "deepinfer_node_joins{node=\"d0\"}", "2"));
}

BOOST_FIXTURE_TEST_CASE(sigterm_makes_a_node_leave_cleanly, three_nodes) {
  p0->signal(SIGTERM);
  auto status = p0->wait(3000ms);
  BOOST_REQUIRE(status);
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
  BOOST_TEST(wait_until([&] { return has_sample(metrics(), "deepinfer_node_up{node=\"p0\",host=\"127.0.0.1\"", "0")
                                     && metrics().find("node=\"p0\",host=\"127.0.0.1\",port") != std::string::npos
                                     && metrics().find("state=\"left\"") != std::string::npos; }, 2000ms).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
