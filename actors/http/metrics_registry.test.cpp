#include "actors/http/metrics_registry.hpp"

#include <boost/test/unit_test.hpp>

#include <stdexcept>
#include <thread>

using deepinfer::actors::http::metrics_registry;

BOOST_AUTO_TEST_SUITE(metrics_registry_suite)

BOOST_AUTO_TEST_CASE(counter_gauge_and_histogram_render_exact_exposition_text) {
  metrics_registry reg;
  auto& requests = reg.add_counter("demo_requests_total", "Requests seen.", {"kind", "code"});
  requests.with({"chat", "200"}).inc();
  requests.with({"chat", "200"}).inc(2);
  requests.with({"completion", "500"}).inc();
  reg.add_gauge("demo_queue_depth", "Queued requests.").with().set(-1.5);
  auto& lat = reg.add_histogram("demo_latency_seconds", "Latency.", {"route"}, {1, 0.5, 0.25, 0.5});
  for (double v : {0.25, 0.5, 0.75, 4.0})
    lat.with({"/x"}).observe(v);
  BOOST_TEST(reg.render() ==
             "# HELP demo_latency_seconds Latency.\n"
             "# TYPE demo_latency_seconds histogram\n"
             "demo_latency_seconds_bucket{route=\"/x\",le=\"0.25\"} 1\n"
             "demo_latency_seconds_bucket{route=\"/x\",le=\"0.5\"} 2\n"
             "demo_latency_seconds_bucket{route=\"/x\",le=\"1\"} 3\n"
             "demo_latency_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n"
             "demo_latency_seconds_sum{route=\"/x\"} 5.5\n"
             "demo_latency_seconds_count{route=\"/x\"} 4\n"
             "# HELP demo_queue_depth Queued requests.\n"
             "# TYPE demo_queue_depth gauge\n"
             "demo_queue_depth -1.5\n"
             "# HELP demo_requests_total Requests seen.\n"
             "# TYPE demo_requests_total counter\n"
             "demo_requests_total{kind=\"chat\",code=\"200\"} 3\n"
             "demo_requests_total{kind=\"completion\",code=\"500\"} 1\n");
}

BOOST_AUTO_TEST_CASE(collectors_report_samples_at_scrape_time) {
  metrics_registry reg;
  std::vector<metrics_registry::sample> view = {{{"n2"}, 0}, {{"n1"}, 1}};
  reg.add_collector("deepinfer_node_up", "1 when the controller sees the node alive.",
                    metrics_registry::kind::gauge, {"node"}, [&] { return view; });
  reg.add_collector("demo_broken", "Throws.", metrics_registry::kind::gauge, {},
                    []() -> std::vector<metrics_registry::sample> { throw std::runtime_error("down"); });
  BOOST_TEST(reg.render() ==
             "# HELP deepinfer_node_up 1 when the controller sees the node alive.\n"
             "# TYPE deepinfer_node_up gauge\n"
             "deepinfer_node_up{node=\"n1\"} 1\n"
             "deepinfer_node_up{node=\"n2\"} 0\n");
  view = {{{"n1"}, 1}, {{"n3"}, 1}}; // membership changed: the next scrape follows it
  BOOST_TEST(reg.render().find("deepinfer_node_up{node=\"n3\"} 1\n") != std::string::npos);
  BOOST_TEST(reg.render().find("node=\"n2\"") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(label_values_and_help_are_escaped) {
  metrics_registry reg;
  reg.add_gauge("demo_info", "Line one\nback\\slash \"quoted\".", {"v"}).with({"a\"b\\c\nd"}).set(1);
  BOOST_TEST(reg.render() ==
             "# HELP demo_info Line one\\nback\\\\slash \"quoted\".\n"
             "# TYPE demo_info gauge\n"
             "demo_info{v=\"a\\\"b\\\\c\\nd\"} 1\n");
}

BOOST_AUTO_TEST_CASE(registering_a_name_again_returns_the_same_family) {
  metrics_registry reg;
  auto& a = reg.add_counter("demo_total", "x", {"k"});
  auto& b = reg.add_counter("demo_total", "x", {"k"});
  BOOST_TEST(&a == &b);
  BOOST_TEST(&a.with({"1"}) == &b.with({"1"}));
}

BOOST_AUTO_TEST_CASE(concurrent_updates_are_all_counted) {
  metrics_registry reg;
  auto& c = reg.add_counter("demo_total", "x", {"t"});
  auto& h = reg.add_histogram("demo_seconds", "x", {}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.with({"same"}).inc();
        h.with().observe(0.5);
      }
    });
  for (auto& t : threads)
    t.join();
  BOOST_TEST(c.with({"same"}).value() == 40000.0);
  auto snap = h.with().read();
  BOOST_TEST(snap.count == 40000u);
  BOOST_TEST(snap.cumulative.front() == 40000u);
  BOOST_TEST(snap.sum == 20000.0);
}

BOOST_AUTO_TEST_SUITE_END()
