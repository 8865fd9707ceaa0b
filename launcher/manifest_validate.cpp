// Cross-node checks of a cluster manifest, and the small helpers of manifest.hpp.
#include <algorithm>
#include <map>
#include <set>

#include "launcher/manifest.hpp"
#include "launcher/toml_reader.hpp"

namespace deepinfer::launcher {

void validate_manifest(cluster_manifest& m, toml_reader& root, std::vector<toml_reader>& nodes) {
  if (m.model_path.empty())
    root.fail("model", "missing: set `model = \"/path/to/model-dir\"` (config.json + "
                       "model.safetensors; deepinfer-mkmodel makes one) or `model = \"tiny\"`");
  if (m.kv.root.empty())
    root.fail("kv", "missing `[kv] root = \"/path/to/kv-store\"` (a local directory or a shared "
                    "mount every node can reach)");
  if (m.nodes.empty())
    root.fail("nodes", "no nodes: add at least one [[nodes]] entry");
  std::map<std::string, size_t> names;
  std::map<std::string, size_t> endpoints;
  std::map<std::string, size_t> http_endpoints;
  size_t controllers = 0;
  size_t entrypoints = 0;
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    auto& n = m.nodes[i];
    auto& r = nodes[i];
    if (auto [it, fresh] = names.emplace(n.name, i); !fresh)
      r.fail("name", "duplicate node name '" + n.name + "' (also nodes[" + std::to_string(it->second) + "])");
    auto ep = n.host + ":" + std::to_string(n.port);
    if (auto [it, fresh] = endpoints.emplace(ep, i); !fresh)
      r.fail("port", "duplicate host:port " + ep + " (also nodes[" + std::to_string(it->second)
                       + "] '" + m.nodes[it->second].name + "')");
    std::set<node_role> seen;
    for (auto role : n.roles)
      if (!seen.insert(role).second)
        r.fail("roles", std::string{"role '"} + to_string(role) + "' listed twice");
    if (n.has(node_role::controller))
      ++controllers;
    if (n.has(node_role::entrypoint)) {
      ++entrypoints;
      if (!n.http)
        n.http = host_port{n.host, 8000};
      auto hep = n.http->host + ":" + std::to_string(n.http->port);
      if (auto [it, fresh] = http_endpoints.emplace(hep, i); !fresh)
        r.fail("http", "duplicate HTTP address " + hep + " (also nodes[" + std::to_string(it->second) + "])");
    } else if (n.http) {
      r.fail("http", "only entrypoint nodes serve HTTP; add the entrypoint role or remove `http`");
    }
    if (n.standby && n.has(node_role::vision))
      r.fail("roles", "a ready-pool node becomes a prefill or decode instance; vision is not one it can be "
                      "given: remove `vision` or `standby` / `pool`");
    if (n.standby && n.has(node_role::controller))
      r.fail("roles", "the controller node cannot be a ready-pool node: it runs the autoscaler that assigns them");
    if (n.launch == launch_method::ssh && n.host.empty())
      r.fail("launch", "ssh needs a host");
  }
  // A node's HTTP address must not collide with any node's CAF port either.
  for (size_t i = 0; i < m.nodes.size(); ++i)
    if (auto& h = m.nodes[i].http)
      if (auto it = endpoints.find(h->host + ":" + std::to_string(h->port)); it != endpoints.end())
        nodes[i].fail("http", "HTTP address is node '" + m.nodes[it->second].name + "''s CAF port");
  if (controllers != 1)
    root.fail("nodes", "exactly one node needs the controller role, found " + std::to_string(controllers));
  if (entrypoints == 0)
    root.fail("nodes", "no node has the entrypoint role: nothing would serve HTTP");
}

bool node_spec::has(node_role r) const {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

std::vector<node_role> node_spec::pool_roles() const {
  if (!standby)
    return {};
  std::vector<node_role> out;
  for (auto r : {node_role::prefill, node_role::decode})
    if (has(r))
      out.push_back(r);
  if (out.empty())
    out = {node_role::prefill, node_role::decode};
  return out;
}

std::vector<std::string> cluster_manifest::warnings() const {
  std::vector<std::string> out;
  for (auto role : {node_role::prefill, node_role::decode}) {
    const bool can = std::any_of(nodes.begin(), nodes.end(), [&](const node_spec& n) {
      auto pool = n.pool_roles();
      return n.standby ? std::find(pool.begin(), pool.end(), role) != pool.end() : n.has(role);
    });
    if (!can)
      out.push_back(std::string{"no node has the "} + to_string(role) + " role and no ready-pool node can become one: "
                    "every request will wait for " + to_string(role) + " capacity until it times out");
  }
  return out;
}

const node_spec* cluster_manifest::find_node(const std::string& name) const {
  for (auto& n : nodes)
    if (n.name == name)
      return &n;
  return nullptr;
}

const node_spec& cluster_manifest::controller() const {
  for (auto& n : nodes)
    if (n.has(node_role::controller))
      return n;
  return nodes.front();  // unreachable for a validated manifest
}

std::string manifest_error::to_string() const {
  std::string out = file;
  if (line > 0)
    out += ":" + std::to_string(line);
  out += ": ";
  if (!key.empty())
    out += "key '" + key + "': ";
  return out + message;
}

const char* to_string(launch_method m) {
  switch (m) {
    case launch_method::automatic: return "auto";
    case launch_method::local: return "local";
    case launch_method::ssh: return "ssh";
  }
  return "unknown";
}

const char* to_string(restart_policy p) {
  switch (p) {
    case restart_policy::never: return "never";
    case restart_policy::on_failure: return "on-failure";
    case restart_policy::always: return "always";
  }
  return "unknown";
}

} // namespace deepinfer::launcher
