// The ssh path of caf-launch against a real sshd on 127.0.0.1: a node with `launch = "ssh"` is
// started through ssh, joins the cluster, and goes away with the launcher.
#include <csignal>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <boost/test/unit_test.hpp>

#include "tests/cluster/node_process.hpp"

using namespace deepinfer::tests;
using namespace std::chrono_literals;
namespace utf = boost::unit_test;

namespace {

int run(const std::string& cmd) {
  return std::system(cmd.c_str());
}

/// sshd needs root for its privilege-separation directory; bootstrap installs it and CI is root.
boost::test_tools::assertion_result can_run_sshd(utf::test_unit_id) {
  const bool root = ::geteuid() == 0;
  const bool sshd = std::filesystem::exists("/usr/sbin/sshd");
  boost::test_tools::assertion_result r(root && sshd);
  if (!root)
    r.message() << "needs root to run sshd (CI runs as root)";
  else if (!sshd)
    r.message() << "no /usr/sbin/sshd (package openssh-server; scripts/bootstrap.sh installs it)";
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(ssh)

BOOST_AUTO_TEST_CASE(remote_node_starts_over_ssh_joins_and_stops_with_the_launcher,
                     *utf::precondition(can_run_sshd)) {
  auto dir = std::filesystem::temp_directory_path() / ("deepinfer-ssh-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories("/run/sshd");
  auto d = dir.string();
  BOOST_REQUIRE(run("ssh-keygen -q -t ed25519 -N '' -f " + d + "/host_key") == 0);
  BOOST_REQUIRE(run("ssh-keygen -q -t ed25519 -N '' -f " + d + "/client_key") == 0);
  std::filesystem::copy_file(dir / "client_key.pub", dir / "authorized_keys");
  auto ssh_port = free_port();
  {
    std::ofstream cfg{dir / "sshd_config"};
    cfg << "Port " << ssh_port << "\nListenAddress 127.0.0.1\nHostKey " << d << "/host_key\n"
        << "AuthorizedKeysFile " << d << "/authorized_keys\nPermitRootLogin prohibit-password\n"
        << "StrictModes no\nUsePAM no\nPasswordAuthentication no\nPidFile " << d << "/sshd.pid\n";
  }
  node_process sshd{{"/usr/sbin/sshd", "-D", "-e", "-f", d + "/sshd_config"}, d + "/sshd.log"};
  auto http = free_port();
  auto manifest = d + "/c.toml";
  {
    std::ofstream out{manifest};
    out << "model = \"/m\"\n[kv]\nroot = \"" << d << "/kv\"\n"
        << "[supervision]\nrestart = \"never\"\n"
        << "[remote]\ncommand = \"" << CAF_LAUNCH_PATH << "\"\n"
        << "ssh_options = [\"-i\", \"" << d << "/client_key\", \"-o\", \"StrictHostKeyChecking=no\", "
        << "\"-o\", \"UserKnownHostsFile=/dev/null\", \"-o\", \"LogLevel=ERROR\"]\n"
        << "[[nodes]]\nname = \"n0\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\nroles = [\"controller\", \"entrypoint\"]\nhttp = \"127.0.0.1:" << http << "\"\n"
        << "[[nodes]]\nname = \"r0\"\nhost = \"127.0.0.1\"\nport = " << free_port()
        << "\nroles = [\"decode\"]\nlaunch = \"ssh\"\nssh_port = " << ssh_port << "\n";
  }
  BOOST_REQUIRE_MESSAGE(wait_until([&] { return run("ssh-keyscan -p " + std::to_string(ssh_port)
                                                    + " 127.0.0.1 >/dev/null 2>&1") == 0; }, eventually),
                        "sshd did not come up:\n" + sshd.log());
  node_process launcher{{CAF_LAUNCH_PATH, "--manifest", manifest, "--no-serve"}, d + "/launcher.log"};
  auto r0_up = [&] {
    auto m = http_get(http, "/metrics");
    return m && has_sample(m->body, "deepinfer_node_up{node=\"r0\"", "1");
  };
  BOOST_REQUIRE_MESSAGE(wait_until(r0_up, eventually), "r0 did not join over ssh; launcher log:\n" + launcher.log()
                                                   + "\nsshd log:\n" + sshd.log());
  // The remote node is a real process started by sshd, not by the launcher.
  BOOST_TEST(launcher.log().find("node=r0 started") != std::string::npos);
  launcher.signal(SIGINT);
  BOOST_REQUIRE(launcher.wait(5000ms));
  // Its ssh session is gone, so the remote node got SIGHUP: nothing answers on its port.
  BOOST_TEST(wait_until([&] { return run("pgrep -f -- '--node [r]0' >/dev/null") != 0; }, 5s).has_value());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

BOOST_AUTO_TEST_SUITE_END()
