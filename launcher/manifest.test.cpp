#include "launcher/manifest.hpp"

#include <boost/test/unit_test.hpp>

#include "actors/node/instance_config.hpp"
#include "launcher/launch_plan.hpp"
#include "recipe/base/checkout_paths.hpp"

using namespace deepinfer::launcher;

namespace {

const std::string good_nodes = R"(
[[nodes]]
name = "n0"
host = "127.0.0.1"
port = 7100
roles = ["controller", "entrypoint"]

[[nodes]]
name = "p0"
host = "127.0.0.1"
port = 7101
roles = ["prefill"]
ranks = 2
)";

const std::string good = "model = \"/m\"\n[kv]\nroot = \"/kv\"\n" + good_nodes;

manifest_error expect_error(const std::string& text) {
  auto r = parse_manifest(text, "test.toml");
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<manifest_error>(r), "manifest was accepted:\n" + text);
  auto e = std::get<manifest_error>(r);
  BOOST_TEST_MESSAGE(e.to_string());
  BOOST_TEST(e.file == "test.toml");
  return e;
}

} // namespace

BOOST_AUTO_TEST_SUITE(manifest)

BOOST_AUTO_TEST_CASE(good_manifest_resolves_defaults_from_design) {
  auto r = parse_manifest(good, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(m.model_path == "/m");
  BOOST_TEST(m.kv.root == "/kv");
  BOOST_TEST(m.kv.ttl_agent_hours == 72.0);
  BOOST_TEST(m.kv.ttl_chatbot_hours == 168.0);
  BOOST_TEST(m.kv.swa_ttl_seconds == 180.0);
  BOOST_TEST(m.kv.write_queue_mib == 256u);
  BOOST_TEST(m.balancer.prefill_ep.redundant_experts_per_rank == 4u);
  BOOST_TEST(m.balancer.decode_ep.replace_steps == 10000u);
  BOOST_TEST(m.autoscaler.quota_high_water == 0.8);
  BOOST_TEST(m.autoscaler.decode_grace_seconds == 60.0);
  BOOST_REQUIRE(m.nodes.size() == 2u);
  BOOST_TEST(m.nodes[1].ranks == 2u);
  BOOST_REQUIRE(m.nodes[0].http.has_value());
  BOOST_TEST(m.nodes[0].http->port == 8000);
  BOOST_TEST(m.controller().name == "n0");
}

BOOST_AUTO_TEST_CASE(unknown_key_is_named_with_its_line) {
  auto e = expect_error(good + "[kv2]\nx = 1\n");
  BOOST_TEST(e.key == "kv2");
  BOOST_TEST(e.line == 17);
  BOOST_TEST(e.message.find("unknown key") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_key_inside_a_node_is_named_with_its_path) {
  auto e = expect_error(good + "\n[[nodes]]\nname = \"d0\"\nhost = \"h\"\nport = 1\nroles = [\"decode\"]\nrank = 3\n");
  BOOST_TEST(e.key == "nodes[2].rank");
  BOOST_TEST(e.line == 23);
}

BOOST_AUTO_TEST_CASE(missing_model_path_is_an_error) {
  auto e = expect_error("[kv]\nroot = \"/kv\"\n" + good_nodes);
  BOOST_TEST(e.key == "model");
  BOOST_TEST(e.message.find("missing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(duplicate_host_and_port_is_an_error) {
  auto e = expect_error(good + "\n[[nodes]]\nname = \"d0\"\nhost = \"127.0.0.1\"\nport = 7101\nroles = [\"decode\"]\n");
  BOOST_TEST(e.key == "nodes[2].port");
  BOOST_TEST(e.message.find("duplicate host:port 127.0.0.1:7101") != std::string::npos);
  BOOST_TEST(e.line == 21);
}

BOOST_AUTO_TEST_CASE(empty_or_spaced_host_is_an_error) {
  for (const char* host : {"", "a b"}) {
    auto e = expect_error(good + "\n[[nodes]]\nname = \"d0\"\nhost = \"" + host + "\"\nport = 7109\nroles = [\"decode\"]\n");
    BOOST_TEST(e.key == "nodes[2].host");
    BOOST_TEST(e.message.find("is not a host") != std::string::npos, e.message);
  }
}

BOOST_AUTO_TEST_CASE(unknown_role_is_an_error) {
  auto e = expect_error(good + "\n[[nodes]]\nname = \"d0\"\nhost = \"h\"\nport = 1\nroles = [\"decoder\"]\n");
  BOOST_TEST(e.key == "nodes[2].roles[0]");
  BOOST_TEST(e.message.find("unknown value 'decoder'") != std::string::npos);
  BOOST_TEST(e.message.find("prefill") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(instance_with_zero_ranks_is_an_error) {
  auto e = expect_error(good + "\n[[nodes]]\nname = \"d0\"\nhost = \"h\"\nport = 1\nroles = [\"decode\"]\nranks = 0\n");
  BOOST_TEST(e.key == "nodes[2].ranks");
  BOOST_TEST(e.message.find("at least one rank") != std::string::npos);
  BOOST_TEST(e.line == 23);
}

BOOST_AUTO_TEST_CASE(unparseable_toml_names_the_line) {
  auto e = expect_error("model = \"/m\"\n[kv\nroot = 1\n");
  BOOST_TEST(e.line == 2);
  BOOST_TEST(e.message.find("invalid TOML") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(wrong_type_is_an_error) {
  auto e = expect_error("model = 5\n[kv]\nroot = \"/kv\"\n" + good_nodes);
  BOOST_TEST(e.key == "model");
  BOOST_TEST(e.message.find("expected a string, got an integer") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(exactly_one_controller_is_required) {
  auto text = good;
  text.replace(text.find("\"controller\", "), 14, "");
  auto e = expect_error(text);
  BOOST_TEST(e.key == "nodes");
  BOOST_TEST(e.message.find("controller") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(heartbeat_must_be_shorter_than_connection_timeout) {
  auto e = expect_error("[caf]\nheartbeat_interval_ms = 2000\nconnection_timeout_ms = 1000\n" + good);
  BOOST_TEST(e.key == "caf.connection_timeout_ms");
}

BOOST_AUTO_TEST_CASE(kv_transport_defaults_to_auto_and_is_checked) {
  auto r = parse_manifest(good, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  BOOST_TEST((std::get<cluster_manifest>(r).kv_transport == deepinfer::actors::kv_transport_mode::automatic));
  BOOST_TEST(std::get<cluster_manifest>(r).rdma_port == 0u);
  auto forced = parse_manifest("kv_transport = \"rdma\"\nrdma_port = 7200\n" + good, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(forced));
  BOOST_TEST((std::get<cluster_manifest>(forced).kv_transport == deepinfer::actors::kv_transport_mode::rdma));
  BOOST_TEST(std::get<cluster_manifest>(forced).rdma_port == 7200u);
  auto e = expect_error("kv_transport = \"carrier_pigeon\"\n" + good);
  BOOST_TEST(e.key == "kv_transport");
  BOOST_TEST(e.message.find("caf_message") != std::string::npos);
  BOOST_TEST(expect_error("rdma_port = 70000\n" + good).key == "rdma_port");
}

BOOST_AUTO_TEST_CASE(cpu_isa_defaults_to_auto_and_is_checked) {
  auto r = parse_manifest(good, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  BOOST_TEST(std::get<cluster_manifest>(r).nodes[1].cpu_isa == "auto");
  std::string forced = good;
  forced.replace(forced.find("ranks = 2"), 9, "ranks = 2\ncpu_isa = \"avx2\"");
  auto f = parse_manifest(forced, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(f));
  BOOST_TEST(std::get<cluster_manifest>(f).nodes[1].cpu_isa == "avx2");
  std::string bad = good;
  bad.replace(bad.find("ranks = 2"), 9, "ranks = 2\ncpu_isa = \"sse2\"");
  auto e = expect_error(bad);
  BOOST_TEST(e.key == "nodes[1].cpu_isa");
  BOOST_TEST(e.message.find("auto, portable, avx2, avx512") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(cpus_are_a_cpu_list_and_checked) {
  auto r = parse_manifest(good, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  BOOST_TEST(std::get<cluster_manifest>(r).nodes[1].cpus.empty());
  std::string pinned = good;
  pinned.replace(pinned.find("ranks = 2"), 9, "ranks = 2\ncpus = \"3,0-1,1\"");
  auto p = parse_manifest(pinned, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(p));
  BOOST_TEST(std::get<cluster_manifest>(p).nodes[1].cpus == "0-1,3"); // as the kernel writes lists
  for (const char* bad_list : {"", "a", "1-", "3-1", "0,", "1024", "-1"}) {
    std::string bad = good;
    bad.replace(bad.find("ranks = 2"), 9, std::string{"ranks = 2\ncpus = \""} + bad_list + "\"");
    auto e = expect_error(bad);
    BOOST_TEST(e.key == "nodes[1].cpus", bad_list);
    BOOST_TEST(e.message.find("0-3") != std::string::npos, e.message); // says what a list looks like
  }
}

BOOST_AUTO_TEST_CASE(missing_file_is_reported) {
  auto r = load_manifest("/nonexistent/cluster.toml");
  BOOST_REQUIRE(std::holds_alternative<manifest_error>(r));
  BOOST_TEST(std::get<manifest_error>(r).message.find("cannot open") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(example_manifest_is_valid) {
  auto r = load_manifest(std::string{deepinfer::checkout::source_dir()} + "/examples/cluster.toml");
  if (auto* e = std::get_if<manifest_error>(&r))
    BOOST_FAIL(e->to_string());
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(m.nodes.size() == 4u);
  BOOST_TEST(m.nodes[3].standby); // pool0: the ready pool
}

BOOST_AUTO_TEST_CASE(remote_nodes_start_over_ssh_with_the_shown_command) {
  auto text = good + "\n[[nodes]]\nname = \"d0\"\nhost = \"gpu-7.example\"\nport = 7200\nroles = [\"decode\"]\nssh_user = \"svc\"\n";
  auto r = parse_manifest(text, "/etc/deepinfer/c.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  m.remote.manifest = "/shared/c.toml";
  auto plan = make_launch_plan(m, "/usr/bin/caf-launch", {"--log-level", "debug"});
  BOOST_REQUIRE(plan.size() == 3u);
  BOOST_TEST(plan[0].local);
  BOOST_TEST(!plan[2].local);
  std::vector<std::string> want{"ssh", "-tt", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p", "22",
                                "svc@gpu-7.example", "--",
                                "exec caf-launch --manifest /shared/c.toml --node d0 --hangup-stops --log-level debug"};
  BOOST_TEST(plan[2].argv == want, boost::test_tools::per_element());
  auto text_plan = describe_plan(m, plan);
  BOOST_TEST(text_plan.find("ssh: ssh -tt -o BatchMode=yes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(shell_quote_protects_spaces_and_quotes) {
  BOOST_TEST(shell_quote("plain-arg/1.toml") == "plain-arg/1.toml");
  BOOST_TEST(shell_quote("a b") == "'a b'");
  BOOST_TEST(shell_quote("it's") == "'it'\\''s'");
}

BOOST_AUTO_TEST_CASE(vision_table_sets_the_image_limits_and_rejects_bad_values) {
  auto r = parse_manifest("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[vision]\nmax_pixels = 65536\n"
                          "max_images_per_request = 2\n" + good_nodes, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(m.vision.max_pixels == 65536);
  BOOST_TEST(m.vision.max_images_per_request == 2);
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[vision]\nmax_pixels = 0\n" + good_nodes).key ==
             "vision.max_pixels");
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[vision]\nmax_images = 3\n" + good_nodes).key ==
             "vision.max_images");
}

BOOST_AUTO_TEST_CASE(vision_table_sets_the_url_fetch_limits_and_the_balancer) {
  const std::string head = "model = \"/m\"\n[kv]\nroot = \"/kv\"\n[vision]\n";
  {
    auto r = parse_manifest(head + good_nodes, "test.toml");
    BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
    auto& m = std::get<cluster_manifest>(r);
    // Defaults: loopback and private addresses are fetched (documented), the patch rule routes.
    BOOST_TEST((m.image_fetch.private_hosts == deepinfer::actors::http::private_addresses::allow));
    BOOST_TEST((m.vision_balancer == deepinfer::balancers::vision_policy::patches));
    // The encoders run under SCHED_IDLE; `nice` is kept for "normal".
    BOOST_TEST(m.vision_priority.idle);
    BOOST_TEST(m.vision_priority.nice == 10);
    BOOST_TEST(m.vision_background_body_bytes == 1u << 20);
  }
  auto r = parse_manifest(head + "max_image_bytes = 1000\nfetch_timeout_s = 2.5\nfetch_max_redirects = 1\n"
                                 "fetch_private_addresses = false\nbalancer = \"round_robin\"\nscheduling = \"normal\"\n"
                                 "nice = 5\nbackground_body_bytes = 0\n" + good_nodes,
                          "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(m.vision.max_bytes == 1000);
  BOOST_TEST(m.image_fetch.timeout.count() == 2500);
  BOOST_TEST(m.image_fetch.max_redirects == 1);
  BOOST_TEST((m.image_fetch.private_hosts == deepinfer::actors::http::private_addresses::refuse));
  BOOST_TEST((m.vision_balancer == deepinfer::balancers::vision_policy::round_robin));
  BOOST_TEST(!m.vision_priority.idle);
  BOOST_TEST(m.vision_priority.nice == 5);
  BOOST_TEST(m.vision_background_body_bytes == 0u);
  BOOST_TEST(expect_error(head + "background_body_bytes = -1\n" + good_nodes).key == "vision.background_body_bytes");
  BOOST_TEST(expect_error(head + "balancer = \"random\"\n" + good_nodes).key == "vision.balancer");
  BOOST_TEST(expect_error(head + "nice = 20\n" + good_nodes).key == "vision.nice");
  BOOST_TEST(expect_error(head + "scheduling = \"batch\"\n" + good_nodes).key == "vision.scheduling");
  BOOST_TEST(expect_error(head + "fetch_timeout_s = 0\n" + good_nodes).key == "vision.fetch_timeout_s");
  BOOST_TEST(expect_error(head + "max_image_bytes = 0\n" + good_nodes).key == "vision.max_image_bytes");
}

BOOST_AUTO_TEST_CASE(limits_tables_reach_the_node_config_and_reject_bad_values) {
  const std::string text = "model = \"/m\"\n[kv]\nroot = \"/kv\"\n[caf]\nbatch_threads = false\n"
                           "[http]\nmax_connections = 128\nheader_timeout_ms = 500\nallowed_hosts = [\"api.internal\"]\n"
                           "cors_origins = [\"https://app.example\"]\napi_keys_file = \"/etc/keys.txt\"\n"
                           "protect_metrics = true\n"
                           "[requests]\njson_max_depth = 32\nstall_timeout_ms = 5000\ndeadline_ms = 9000\ndefault_max_tokens = 2048\nmax_batch_prompts = 8\nmax_prompt_logprobs_tokens = 512\n"
                           "api_keys = [\"key-0123456789\"]\nresponses_ttl_s = 60\nresponses_store_mib = 8\n"
                           "server_timing = false\n"
                           "[admission]\nprefill_tokens_per_rank = 1000\nmax_waiting = 3\nqueue_timeout_ms = 700\n"
                           "[so]\ncache_mib = 64\ncompile_timeout_ms = 500\njson_whitespace = 0\n" +
                           good_nodes;
  auto r = parse_manifest(text, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(!m.caf.batch_threads);
  BOOST_TEST(m.so_cache_mib == 64u);
  BOOST_TEST(m.so_compile_timeout_ms == 500u);
  BOOST_TEST(m.so_json_whitespace == 0);
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[so]\njson_whitespace = -2\n" + good_nodes).key ==
             "so.json_whitespace");
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[so]\ncache_mib = 0\n" + good_nodes).key == "so.cache_mib");
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\nwrite_queue_mib = 0\n" + good_nodes).key ==
             "kv.write_queue_mib");
  {
    auto r = parse_manifest("model = \"/m\"\n[kv]\nroot = \"/kv\"\nwrite_queue_mib = 64\n" + good_nodes, "test.toml");
    BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
    BOOST_TEST(std::get<cluster_manifest>(r).kv.write_queue_mib == 64u);
  }
  BOOST_TEST(m.requests.json.max_depth == 32u);
  BOOST_TEST(m.requests.stall_timeout.count() == 5000);
  BOOST_TEST(m.requests.deadline.count() == 9000);
  BOOST_TEST(m.requests.default_max_tokens == 2048);
  BOOST_TEST(m.requests.max_batch_prompts == 8);
  BOOST_TEST(m.requests.max_prompt_logprobs_tokens == 512);
  BOOST_TEST(!m.requests.server_timing);
  BOOST_TEST(deepinfer::actors::request_limits{}.server_timing); // on unless the manifest turns it off
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[requests]\ndefault_max_tokens = 0\n" + good_nodes).key ==
             "requests.default_max_tokens");
  BOOST_TEST(m.requests.api_keys.size() == 1u);
  BOOST_TEST(m.requests.responses_ttl.count() == 60);
  BOOST_TEST(m.requests.responses_max_bytes == 8u << 20);
  BOOST_TEST(m.admission.prefill_tokens_per_rank == 1000);
  BOOST_TEST(m.admission.decode_sequences_per_rank == 256); // default kept
  BOOST_TEST(m.admission.max_waiting == 3u);
  auto cfg = make_node_config(m, m.nodes[0]);
  BOOST_REQUIRE(cfg.http.has_value());
  BOOST_TEST(cfg.http->max_connections == 128u);
  BOOST_TEST(cfg.http->header_timeout.count() == 500);
  BOOST_TEST(cfg.http->allowed_hosts == std::vector<std::string>{"api.internal"});
  BOOST_TEST(cfg.http->cors_origins.size() == 1u);
  BOOST_TEST(cfg.http->api_keys_file == "/etc/keys.txt");
  BOOST_TEST(cfg.http->protect_metrics);
  BOOST_TEST(cfg.http->port == 8000); // from the node, not [http]
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[requests]\njson_max_depth = 0\n" + good_nodes).key ==
             "requests.json_max_depth");
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[requests]\napi_keys = [\"short\"]\n" + good_nodes)
               .message.find("8 characters") != std::string::npos);
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[admission]\nqueue_timeout = 3\n" + good_nodes).key ==
             "admission.queue_timeout");
}

// Issue 17: ready-pool nodes start no instance; the controller's node gets the autoscaler.
BOOST_AUTO_TEST_CASE(ready_pool_nodes_and_autoscaler_keys_reach_the_node_configs) {
  const std::string text = "model = \"/m\"\n[kv]\nroot = \"/kv\"\n"
                           "[autoscaler]\ninterval_seconds = 0.5\nmax_step = 3\nheadroom = 1.5\nready_pool = 2\n"
                           "prefill_missed_tokens_per_s = 9000\ndecode_requests_per_instance = 40\n"
                           "queue_time_target_seconds = 2\ndecode_grace_seconds = 7\nquota_high_water = 0.7\n" +
                           good_nodes +
                           "[[nodes]]\nname = \"pool0\"\nhost = \"127.0.0.1\"\nport = 7102\nroles = [\"pool\"]\n"
                           "[[nodes]]\nname = \"pool1\"\nhost = \"127.0.0.1\"\nport = 7103\nroles = [\"decode\"]\nstandby = true\n";
  auto r = parse_manifest(text, "test.toml");
  if (auto* e = std::get_if<manifest_error>(&r))
    BOOST_FAIL(e->to_string());
  auto& m = std::get<cluster_manifest>(r);
  BOOST_TEST(m.nodes[2].standby);
  BOOST_TEST(m.nodes[3].standby);
  BOOST_TEST(m.nodes[3].has(node_role::pool)); // standby = true adds the role
  BOOST_TEST((m.nodes[2].pool_roles() == std::vector<node_role>{node_role::prefill, node_role::decode}));
  BOOST_TEST((m.nodes[3].pool_roles() == std::vector<node_role>{node_role::decode}));
  BOOST_TEST(m.nodes[0].pool_roles().empty());
  auto pool = make_node_config(m, m.nodes[3]);
  BOOST_TEST(pool.instances.empty());
  BOOST_REQUIRE_EQUAL(pool.pool_instances.size(), 1u);
  BOOST_TEST((pool.pool_instances[0].role == node_role::decode));
  BOOST_TEST(pool.pool_instances[0].drain_grace.count() == 7000);
  BOOST_TEST(pool.self.roles.has(node_role::pool));
  BOOST_TEST(pool.autoscaler.interval.count() == 0); // only the controller's node runs it
  auto ctl = make_node_config(m, m.nodes[0]);
  BOOST_TEST(ctl.autoscaler.interval.count() == 500);
  auto& p = ctl.autoscaler.policy;
  BOOST_TEST(p.max_step_up == 3);
  BOOST_TEST(p.max_step_down == 3);
  BOOST_TEST(p.headroom == 1.5);
  BOOST_TEST(p.ready_pool == 2);
  BOOST_TEST(p.prefill_missed_tok_per_s == 9000.0);
  BOOST_TEST(p.decode_requests == 40.0);
  BOOST_TEST(p.queue_time_target_s == 2.0);
  BOOST_TEST(p.decode_grace_s == 7.0);
  BOOST_TEST(p.no_scale_down_quota_use == 0.7);
  auto plan = describe_plan(m, make_launch_plan(m, "/usr/bin/caf-launch", {}));
  BOOST_TEST(plan.find("ready-pool=prefill|decode") != std::string::npos, plan);
  BOOST_TEST(plan.find("decode_requests_per_instance=40") != std::string::npos, plan);
  // A pool node cannot be the controller, nor a vision instance.
  const auto bad = [&](const std::string& roles) {
    return "model = \"/m\"\n[kv]\nroot = \"/kv\"\n" + good_nodes +
           "[[nodes]]\nname = \"x\"\nhost = \"127.0.0.1\"\nport = 7109\nroles = " + roles + "\n";
  };
  BOOST_TEST(expect_error(bad("[\"pool\", \"vision\"]")).key == "nodes[2].roles");
  BOOST_TEST(expect_error(bad("[\"pool\", \"controller\"]")).message.find("controller") != std::string::npos);
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\n[autoscaler]\nheadroom = 0.5\n" + good_nodes).key ==
             "autoscaler.headroom");
}

// Every key parsed reaches what it names (issue 17): those that would not are refused.
BOOST_AUTO_TEST_CASE(keys_nothing_uses_are_refused_with_what_to_do) {
  const std::string head = "model = \"/m\"\n[kv]\nroot = \"/kv\"\n";
  BOOST_TEST(expect_error("model = \"/m\"\n[kv]\nroot = \"/kv\"\nblock_tokens = 64\n" + good_nodes).key == "kv.block_tokens");
  auto r = parse_manifest("model = \"/m\"\n[kv]\nroot = \"/kv\"\nblock_tokens = 128\n" + good_nodes, "test.toml");
  BOOST_TEST(std::holds_alternative<cluster_manifest>(r)); // what the format says: accepted
  BOOST_TEST(expect_error(head + "[balancer.decode]\nkv_weight = 1.0\n" + good_nodes).key == "balancer.decode.kv_weight");
  // A CUDA node is a valid manifest (issue 22): whether its machine has a device is checked by
  // the node when it starts (launcher.test: a clear error without one).
  auto cuda = good_nodes;
  cuda.replace(cuda.find("ranks = 2"), 9, "ranks = 2\nbackend = \"cuda\"");
  auto with_cuda = parse_manifest(head + cuda, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(with_cuda));
  BOOST_TEST((std::get<cluster_manifest>(with_cuda).nodes[1].backend == backend_kind::cuda));
  auto typo = good_nodes;
  typo.replace(typo.find("ranks = 2"), 9, "ranks = 2\nbackend = \"gpu\"");
  BOOST_TEST(expect_error(head + typo).key == "nodes[1].backend");
  r = parse_manifest(head + "[balancer.prefill]\nstep_budget_ms = 40\n" + good_nodes, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  BOOST_TEST(std::get<cluster_manifest>(r).balancer.prefill_step_budget_ms == 40.0);
  BOOST_TEST(!std::get<cluster_manifest>(r).balancer.prefill_whole_job_fits);
  // A short prompt's reserve above the quota is one step budget.
  BOOST_TEST(make_balancer_config(std::get<cluster_manifest>(r).balancer).router.prefill.short_reserve_s == 0.04,
             boost::test_tools::tolerance(1e-12));
  r = parse_manifest(head + "[balancer.prefill]\nquota_per_rank_s = 0.5\nwhole_job_fits = true\n" + good_nodes, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  BOOST_TEST(std::get<cluster_manifest>(r).balancer.prefill_whole_job_fits);
  BOOST_TEST(make_balancer_config(std::get<cluster_manifest>(r).balancer).router.prefill.whole_job_fits);
  BOOST_TEST(expect_error(head + "[balancer.prefill]\nwhole_job_fits = 1\n" + good_nodes).key ==
             "balancer.prefill.whole_job_fits");
}


// `caf-launch --instances N`: N prefill and N decode instances of the embedded default, each its
// own EP group with a name of its own (two instances of one role on a node must not share one).
BOOST_AUTO_TEST_CASE(embedded_default_with_several_instances_names_each_one) {
  auto cfg = make_embedded_config(host_port{"127.0.0.1", 8000}, "m", 1, 2);
  std::vector<std::string> names;
  for (auto& spec : cfg.instances) {
    BOOST_TEST((spec.role == deepinfer::actors::node_role::vision ? 1u : spec.ranks) == 1u);
    names.push_back(deepinfer::actors::make_instance_config(cfg, spec, {}).instance);
  }
  const std::vector<std::string> expected{"local/prefill", "local/decode", "local/prefill.2", "local/decode.2",
                                          "local/vision"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  BOOST_TEST(make_embedded_config(host_port{"127.0.0.1", 8000}, "m").instances.size() == 3u); // 1 + 1 + vision
  // caf-launch's --prefill-* flags reach the balancer as a manifest's [balancer.prefill] would.
  balancer_params b;
  b.prefill_step_budget_ms = 40;
  b.prefill_whole_job_fits = true;
  b.prefill_quota_per_rank_s = 0.5;
  const auto prefill = make_embedded_config(host_port{"127.0.0.1", 8000}, "m", 1, 2, b).balancers.router.prefill;
  BOOST_TEST(prefill.short_reserve_s == 0.04);
  BOOST_TEST(prefill_step_of(b).count() == 40000); // the ranks' step budget, in µs
  BOOST_TEST(prefill.whole_job_fits);
  BOOST_TEST(prefill.quota_per_rank_s == 0.5);
}

// `instances = N` on a manifest node: N prefill (or decode) instances there, named like the
// embedded default's; a ready-pool node becomes one instance, so more is an error.
BOOST_AUTO_TEST_CASE(a_node_with_several_instances_gets_one_spec_and_name_each) {
  auto three = good;
  three.replace(three.find("ranks = 2"), 9, "ranks = 1\ninstances = 3");
  auto r = parse_manifest(three, "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto& m = std::get<cluster_manifest>(r);
  auto cfg = make_node_config(m, m.nodes[1]);
  std::vector<std::string> names;
  for (auto& spec : cfg.instances)
    names.push_back(deepinfer::actors::make_instance_config(cfg, spec, {}).instance);
  const std::vector<std::string> expected{"p0/prefill", "p0/prefill.2", "p0/prefill.3"};
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  BOOST_TEST(describe_plan(m, make_launch_plan(m, "/usr/bin/caf-launch", {})).find("instances=3") != std::string::npos);
  auto none = good;
  none.replace(none.find("ranks = 2"), 9, "instances = 0");
  BOOST_TEST(expect_error(none).key == "nodes[1].instances");
  BOOST_TEST(expect_error(good + "\n[[nodes]]\nname = \"q0\"\nhost = \"h\"\nport = 1\nroles = [\"pool\"]\ninstances = 2\n")
               .key == "nodes[2].instances");
}

// A manifest that validates but cannot serve says why (printed by caf-launch at start).
BOOST_AUTO_TEST_CASE(a_manifest_without_prefill_or_decode_capacity_warns) {
  auto r = parse_manifest(good, "test.toml"); // a prefill node, no decode node
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(r));
  auto w = std::get<cluster_manifest>(r).warnings();
  BOOST_REQUIRE_EQUAL(w.size(), 1u);
  BOOST_TEST(w[0].find("no node has the decode role") != std::string::npos, w[0]);
  auto pooled = parse_manifest(good + "\n[[nodes]]\nname = \"q0\"\nhost = \"h\"\nport = 9\nroles = [\"pool\"]\n", "test.toml");
  BOOST_REQUIRE(std::holds_alternative<cluster_manifest>(pooled));
  BOOST_TEST(std::get<cluster_manifest>(pooled).warnings().empty()); // the pool node can become a decode instance
}

BOOST_AUTO_TEST_SUITE_END()
