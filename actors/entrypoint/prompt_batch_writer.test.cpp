#include "actors/entrypoint/prompt_batch_writer.hpp"

#include <boost/test/unit_test.hpp>

using deepinfer::actors::prompt_batch_writer;
namespace http = deepinfer::actors::http;
using json = nlohmann::json;

namespace {

/// The client's connection.
struct capture final : http::response_writer {
  unsigned status = 0;
  std::string bytes;
  bool started = false, finished = false;
  void send(http::http_response r) override { status = r.status; bytes = r.body; finished = true; }
  void start_stream(unsigned s, std::string, header_list) override { status = s; started = true; }
  void write(std::string chunk) override { bytes += chunk; }
  void finish() override { finished = true; }
  void on_disconnect(std::function<void()>) override {}
};

http::http_response body(unsigned status, const json& j) {
  http::http_response r;
  r.status = status;
  r.body = j.dump();
  return r;
}

json completion(const std::string& id, std::vector<std::string> texts, int prompt_tokens) {
  json choices = json::array();
  for (size_t k = 0; k < texts.size(); ++k)
    choices.push_back({{"text", texts[k]}, {"index", k}, {"finish_reason", "length"}});
  return {{"id", id}, {"object", "text_completion"}, {"choices", choices},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", 2 * texts.size()},
                     {"prompt_tokens_details", {{"cached_tokens", 1}}}}}};
}

} // namespace

BOOST_AUTO_TEST_SUITE(prompt_batch_writer_suite)

BOOST_AUTO_TEST_CASE(bodies_merge_in_prompt_order_whatever_order_they_finish_in) {
  auto client = std::make_shared<capture>();
  auto m = prompt_batch_writer::make(client, 2, 2);
  auto p0 = m->part(0), p1 = m->part(1);
  p1->send_json(200, completion("b", {"x", "y"}, 7).dump());
  BOOST_TEST(!client->finished);
  p0->send_json(200, completion("a", {"u", "v"}, 5).dump());
  BOOST_TEST_REQUIRE(client->finished);
  BOOST_TEST(client->status == 200u);
  auto j = json::parse(client->bytes);
  BOOST_TEST(j["id"] == "a");
  BOOST_TEST_REQUIRE(j["choices"].size() == 4u);
  for (int k = 0; k < 4; ++k)
    BOOST_TEST(j["choices"][k]["index"] == k);
  BOOST_TEST(j["choices"][2]["text"] == "x");
  BOOST_TEST(j["usage"]["prompt_tokens"] == 12);
  BOOST_TEST(j["usage"]["completion_tokens"] == 8);
  BOOST_TEST(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(a_part_refused_before_any_stream_is_the_answer_and_cancels_the_others) {
  auto client = std::make_shared<capture>();
  auto m = prompt_batch_writer::make(client, 3, 1);
  auto p0 = m->part(0), p1 = m->part(1), p2 = m->part(2);
  int cancelled = 0;
  p0->on_disconnect([&] { ++cancelled; });
  p2->on_disconnect([&] { ++cancelled; });
  p1->send(body(400, {{"error", {{"message", "too long"}, {"param", "prompt"}}}}));
  BOOST_TEST(client->status == 400u);
  BOOST_TEST(cancelled == 2);
  p0->send_json(200, completion("a", {"u"}, 1).dump()); // late: ignored
  BOOST_TEST(json::parse(client->bytes)["error"]["message"] == "too long");
}

BOOST_AUTO_TEST_CASE(streams_interleave_with_their_indices_rewritten_and_end_once_with_summed_usage) {
  auto client = std::make_shared<capture>();
  auto m = prompt_batch_writer::make(client, 2, 2);
  auto p0 = m->part(0), p1 = m->part(1);
  auto chunk = [](int index, const std::string& text) {
    return "data: " + json{{"id", "a"}, {"choices", {{{"index", index}, {"text", text}}}}}.dump() + "\n\n";
  };
  auto usage = [](int n) {
    return "data: " + json{{"id", "a"}, {"choices", json::array()}, {"usage", {{"total_tokens", n}}}}.dump() + "\n\n";
  };
  p1->start_stream(200, "text/event-stream", {});
  p0->start_stream(200, "text/event-stream", {});
  p1->write(chunk(1, "y"));
  p0->write(chunk(0, "u") + chunk(1, "v"));
  p1->write(usage(3) + "data: [DONE]\n\n");
  p1->finish();
  BOOST_TEST(!client->finished);
  p0->write(usage(4) + "data: [DONE]\n\n");
  p0->finish();
  BOOST_TEST(client->finished);
  std::vector<json> events;
  std::vector<std::string> done;
  for (size_t at = 0; at < client->bytes.size();) {
    auto end = client->bytes.find("\n\n", at);
    auto data = client->bytes.substr(at + 6, end - at - 6);
    at = end + 2;
    if (data == "[DONE]")
      done.push_back(data);
    else
      events.push_back(json::parse(data));
  }
  BOOST_TEST(done.size() == 1u);
  BOOST_TEST(client->bytes.ends_with("data: [DONE]\n\n"));
  BOOST_TEST_REQUIRE(events.size() == 4u);
  BOOST_TEST(events[0]["choices"][0]["index"] == 3); // prompt 1, choice 1
  BOOST_TEST(events[1]["choices"][0]["index"] == 0);
  BOOST_TEST(events[2]["choices"][0]["index"] == 1);
  BOOST_TEST(events[3]["usage"]["total_tokens"] == 7);
  BOOST_TEST(events[3]["choices"].empty());
}

BOOST_AUTO_TEST_SUITE_END()
