// Embeds one DeepInfer node (every role, in this process) inside another C++ program, spawns an
// actor of its own next to ours on the same CAF actor system, and reads the cluster view.
#include <chrono>
#include <cstdio>
#include <thread>

#include <caf/all.hpp>

#include "actors/node/node_runtime.hpp"

int main(int argc, char** argv) {
  using namespace deepinfer::actors;
  node_runtime_config cfg;
  cfg.self.name = "embedded";
  cfg.self.host = "127.0.0.1";
  cfg.self.roles = {node_role::controller, node_role::entrypoint, node_role::prefill, node_role::decode};
  cfg.hosts_controller = true;
  cfg.instances = {{node_role::prefill, 2}, {node_role::decode, 1}};
  http_endpoint http;
  http.port = argc > 1 ? static_cast<uint16_t>(std::atoi(argv[1])) : 0;
  http.models = {"my-model"};
  cfg.http = http;

  node_runtime node{cfg};
  if (auto err = node.start()) {
    std::fprintf(stderr, "embed: %s\n", err->c_str());
    return 1;
  }
  // Our own actor on the same system. Our actors (scoped ones included) must be gone before
  // node.stop(): the actor system waits for every actor when it shuts down.
  int answer = 0;
  {
    auto doubler = node.system().spawn([]() -> caf::behavior { return {[](int x) { return 2 * x; }}; });
    caf::scoped_actor self{node.system()};
    self->request(doubler, std::chrono::seconds(1), 21).receive([&](int x) { answer = x; }, [](caf::error&) {});
    self->send_exit(doubler, caf::exit_reason::user_shutdown);
  }
  // Wait until both instances have reported through the controller.
  for (int i = 0; i < 100 && node.snapshot().view.instances.size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto s = node.snapshot();
  std::printf("answer=%d http_port=%u nodes=%zu instances=%zu\n", answer, node.http_port(),
              s.view.nodes.size(), s.view.instances.size());
  node.stop();
  return answer == 42 && s.view.instances.size() == 2 ? 0 : 1;
}
