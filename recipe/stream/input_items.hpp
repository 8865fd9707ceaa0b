#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/base/expected.hpp"

namespace deepinfer::recipe {

/// One page of `GET /v1/responses/{id}/input_items` (OpenAI's `ResponseItemList`).
struct input_items_query {
  /// 1 to 100.
  std::int64_t limit = 20;
  /// Newest first (OpenAI's default) or oldest first.
  bool ascending = false;
  /// List the items after this one (in the order asked for); empty: from the start.
  std::string after;
};

/// Reads `limit`, `order` and `after` from a URL query string (`include` is accepted: every item
/// is listed whole); a 400 in the Responses API's shape for a bad value.
expected<input_items_query, api_error> parse_input_items_query(std::string_view query);

/// The page of `input` (the conversation a response answered, without its instructions: what
/// the model read) as Responses items: messages (`input_text` / `input_image` parts; an
/// assistant's text as `output_text`), an assistant turn's reasoning as a `reasoning` item and
/// its calls as `function_call` items, tool results as `function_call_output` items. Item ids are
/// the response id's with the item's index, so they are the same on every call (`after` pages
/// by them); an `after` that names no item is a 400.
expected<nlohmann::ordered_json, api_error> input_items_page(std::span<const message> input,
                                                             const std::string& response_id,
                                                             const input_items_query& q);

} // namespace deepinfer::recipe
