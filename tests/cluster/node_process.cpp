#include "tests/cluster/node_process.hpp"

#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace deepinfer::tests {

node_process::node_process(std::vector<std::string> argv, std::string log_path)
  : log_path_(std::move(log_path)) {
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(a.data());
  args.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
}

node_process::~node_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

void node_process::signal(int sig) const {
  ::kill(pid_, sig);
}

std::optional<int> node_process::wait(std::chrono::milliseconds timeout) {
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    if (std::chrono::steady_clock::now() - t0 > timeout)
      return std::nullopt;
    ::usleep(10000);
  }
}

std::string node_process::log() const {
  std::ifstream in{log_path_};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint16_t free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acc{io, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  return acc.local_endpoint().port();
}

std::optional<http_reply> http_get(uint16_t port, const std::string& target,
                                   std::chrono::milliseconds timeout) {
  namespace beast = boost::beast;
  namespace bhttp = beast::http;
  try {
    boost::asio::io_context io;
    beast::tcp_stream stream{io};
    stream.expires_after(timeout);
    stream.connect(boost::asio::ip::tcp::endpoint{boost::asio::ip::make_address("127.0.0.1"), port});
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    bhttp::write(stream, req);
    beast::flat_buffer buf;
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buf, res);
    return http_reply{res.result_int(), res.body()};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool has_sample(const std::string& metrics, const std::string& prefix, const std::string& value) {
  std::istringstream in{metrics};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0 && line.size() > value.size()
        && line.compare(line.size() - value.size() - 1, std::string::npos, " " + value) == 0)
      return true;
  return false;
}

} // namespace deepinfer::tests
