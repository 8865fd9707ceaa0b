#include "recipe/stream/input_items.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <vector>

namespace deepinfer::recipe {

namespace {

using ojson = nlohmann::ordered_json;

api_error bad_query(std::string message, std::string param) {
  api_error e;
  e.api = api_kind::responses;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

const char* role_name(role r) {
  switch (r) {
    case role::system: return "system";
    case role::developer: return "developer";
    case role::user: return "user";
    case role::assistant: return "assistant";
    case role::tool: return "tool";
  }
  return "user";
}

/// `prefix_` + the response id's own part + the item's index, e.g. msg_<id>0003.
std::string item_id(const char* prefix, const std::string& response_id, std::size_t index) {
  const auto own = response_id.substr(response_id.find('_') == std::string::npos ? 0 : response_id.find('_') + 1);
  char n[16];
  std::snprintf(n, sizeof n, "%04zx", index);
  return std::string(prefix) + "_" + own + n;
}

/// The items of `input` in order (oldest first).
std::vector<ojson> items_of(std::span<const message> input, const std::string& response_id) {
  std::vector<ojson> out;
  auto next_id = [&](const char* prefix) { return item_id(prefix, response_id, out.size()); };
  for (const auto& m : input) {
    if (m.role == role::tool) {
      std::string text;
      for (const auto& p : m.content)
        if (p.type == content_part::kind::text)
          text += p.value;
      out.push_back({{"id", next_id("fco")}, {"type", "function_call_output"}, {"call_id", m.tool_call_id},
                     {"output", text}, {"status", "completed"}});
      continue;
    }
    const bool assistant = m.role == role::assistant;
    if (assistant && m.reasoning && !m.reasoning->empty())
      out.push_back({{"id", next_id("rs")}, {"type", "reasoning"}, {"summary", ojson::array()},
                     {"content", ojson::array({ojson{{"type", "reasoning_text"}, {"text", *m.reasoning}}})}});
    ojson content = ojson::array();
    for (const auto& p : m.content) {
      if (p.type == content_part::kind::image)
        content.push_back({{"type", "input_image"}, {"image_url", p.value}, {"detail", "auto"}});
      else if (assistant)
        content.push_back({{"type", "output_text"}, {"text", p.value}, {"annotations", ojson::array()}, {"logprobs", ojson::array()}});
      else
        content.push_back({{"type", "input_text"}, {"text", p.value}});
    }
    if (!content.empty() || !assistant)
      out.push_back({{"id", next_id("msg")}, {"type", "message"}, {"role", role_name(m.role)}, {"status", "completed"},
                     {"content", std::move(content)}});
    for (const auto& c : m.tool_calls)
      out.push_back({{"id", next_id("fc")}, {"type", "function_call"}, {"call_id", c.id}, {"name", c.name},
                     {"arguments", c.arguments}, {"status", "completed"}});
  }
  return out;
}

} // namespace

expected<input_items_query, api_error> parse_input_items_query(std::string_view query) {
  input_items_query q;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto field = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = field.find('=');
    const auto key = field.substr(0, eq);
    const auto value = eq == std::string_view::npos ? std::string_view{} : field.substr(eq + 1);
    if (key == "limit") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q.limit);
      if (ec != std::errc{} || end != value.data() + value.size() || q.limit < 1 || q.limit > 100)
        return bad_query("Invalid 'limit': expected an integer from 1 to 100.", "limit");
    } else if (key == "order") {
      if (value != "asc" && value != "desc")
        return bad_query("Invalid 'order': expected 'asc' or 'desc'.", "order");
      q.ascending = value == "asc";
    } else if (key == "after") {
      q.after = std::string(value);
    }
    // `include` and anything else: every item is listed whole.
  }
  return q;
}

expected<nlohmann::ordered_json, api_error> input_items_page(std::span<const message> input,
                                                             const std::string& response_id,
                                                             const input_items_query& q) {
  auto items = items_of(input, response_id);
  if (!q.ascending)
    std::reverse(items.begin(), items.end());
  std::size_t from = 0;
  if (!q.after.empty()) {
    auto it = std::find_if(items.begin(), items.end(), [&](const ojson& i) { return i["id"] == q.after; });
    if (it == items.end())
      return bad_query("Invalid 'after': no input item of response '" + response_id + "' has the id '" + q.after + "'.",
                       "after");
    from = static_cast<std::size_t>(it - items.begin()) + 1;
  }
  const auto to = std::min(items.size(), from + static_cast<std::size_t>(q.limit));
  ojson data = ojson::array();
  for (auto i = from; i < to; ++i)
    data.push_back(std::move(items[i]));
  ojson page = {{"object", "list"}, {"data", data},
                {"first_id", data.empty() ? ojson() : data.front()["id"]},
                {"last_id", data.empty() ? ojson() : data.back()["id"]},
                {"has_more", to < items.size()}};
  return page;
}

} // namespace deepinfer::recipe
