// A request's structured-output constraint (issue 19): which one it asks for (a format, vLLM's
// structured outputs, a forced tool call), compiled here when no compiler actor did, and the
// output limit checked against the shortest output it accepts.
#include "actors/entrypoint/request_prepare.hpp"

#include "actors/entrypoint/serving_context.hpp"
#include "actors/node/structured_output.hpp"

namespace deepinfer::actors {

namespace {

/// Where each API puts the structured-output format (the `param` of its 400).
const char* format_param(recipe::api_kind api) {
  switch (api) {
    case recipe::api_kind::responses: return "text.format";
    case recipe::api_kind::messages: return "output_config.format";
    default: return "response_format";
  }
}

} // namespace

expected<std::optional<constraint_job>, recipe::api_error> constraint_job_of(const entrypoint::context& ctx,
                                                                            const recipe::conversation& conv) {
  using mode = recipe::response_format::mode;
  using choice = recipe::tool_choice::mode;
  const bool format = conv.format && conv.format->kind != mode::text;
  const bool forced_call = conv.tool_choice.kind == choice::required || conv.tool_choice.kind == choice::named;
  if (!format && !conv.structured && !forced_call)
    return std::optional<constraint_job>{};
  const auto api = conv.api;
  const char* param = format ? format_param(api) : conv.structured ? "structured_outputs" : "tool_choice";
  if (forced_call && (format || conv.structured))
    return request_error(api, 400, "invalid_request_error",
                    "A forced tool call (tool_choice) and an output format cannot both be enforced; drop one.", param);
  // With thinking on the reasoning is free and the constraint starts after `</think>`.
  std::optional<int32_t> after;
  if (conv.thinking) {
    after = ctx.specials->id(recipe::spelling::think_close);
    if (!after)
      return request_error(api, 400, "invalid_request_error",
                      "This template has no `</think>` token to start the output format after; turn thinking off "
                      "for this request.",
                      param);
  }
  recipe::so::constraint c;
  if (forced_call) {
    // The DSML markup of a call to the named tool (or any tool), arguments by its schema.
    nlohmann::ordered_json spec{{"tools", nlohmann::ordered_json::array()},
                                {"parallel", conv.parallel_tool_calls && conv.tool_choice.kind == choice::required},
                                {"v41", ctx.specials->version() == recipe::template_version::dsv41}};
    for (const auto& t : conv.tools)
      if (conv.tool_choice.kind == choice::required || t.name == conv.tool_choice.name)
        spec["tools"].push_back({{"name", t.name},
                                 {"parameters", t.function.value("parameters", nlohmann::ordered_json::object())}});
    c.kind = recipe::so::constraint_kind::tool_calls;
    c.text = spec.dump();
  } else if (format && conv.format->kind == mode::json_object)
    c.kind = recipe::so::constraint_kind::json_object;
  else if (format) {
    c.kind = recipe::so::constraint_kind::json_schema;
    c.text = conv.format->schema.dump();
  } else {
    using so_mode = recipe::structured_outputs::mode;
    c.kind = conv.structured->kind == so_mode::regex         ? recipe::so::constraint_kind::regex
             : conv.structured->kind == so_mode::grammar     ? recipe::so::constraint_kind::grammar
             : conv.structured->kind == so_mode::json_object ? recipe::so::constraint_kind::json_object
                                                             : recipe::so::constraint_kind::json_schema;
    c.text = conv.structured->text;
  }
  // JSON outputs: whitespace between tokens bounded by the server (a sampled model can spend its
  // whole output on whitespace a grammar allows), none when the request asks for compact JSON.
  if (c.kind == recipe::so::constraint_kind::json_schema || c.kind == recipe::so::constraint_kind::json_object ||
      c.kind == recipe::so::constraint_kind::tool_calls)
    c.json_whitespace = conv.compact_json ? std::optional<std::uint32_t>{0} : ctx.cfg.so_json_whitespace;
  if (!ctx.so)
    return request_error(api, 400, "invalid_request_error",
                    "This server has no structured-output compiler; send the request without a format.",
                    param);
  constraint_job job;
  job.spec = structured_output::spec_of(c, after);
  job.constraint = std::move(c);
  job.api = api;
  job.param = param;
  return std::optional<constraint_job>{std::move(job)};
}

recipe::api_error constraint_job::refused(const std::string& why) const {
  return request_error(api, 400, "invalid_request_error", "The output format cannot be enforced: " + why + ".", param);
}

/// The request's constraint, compiled now (unless `compiled_shortest`: a compiler actor did it)
/// so that one it cannot enforce is refused before it is placed: never silently ignored.
expected<format_constraint, recipe::api_error> constraint_of(const entrypoint::context& ctx,
                                                             const recipe::conversation& conv,
                                                             std::optional<int64_t> compiled_shortest) {
  auto job = constraint_job_of(ctx, conv);
  if (!job)
    return std::move(job).error();
  if (!*job)
    return format_constraint{};
  format_constraint out;
  if (compiled_shortest) {
    out.shortest = *compiled_shortest;
  } else {
    auto m = ctx.so->compile((*job)->constraint);
    if (!m)
      return (*job)->refused(m.error());
    out.shortest = static_cast<int64_t>((*m)->shortest_completion_length((*m)->start()));
  }
  out.spec = std::move((*job)->spec);
  return out;
}

/// A 400 when the output limit (`limit`, `named` by the client or the default lowered to what
/// the context leaves) cannot hold the shortest output the request's format accepts (`shortest`
/// tokens, plus the reply's end, plus `</think>` with thinking on): the output would stop cut off
/// (a forced tool call's arguments empty, a schema's object unclosed) though the format promises
/// a complete one.
std::optional<recipe::api_error> too_short_for_the_format(const recipe::conversation& conv, int64_t limit,
                                                          bool named, int64_t shortest) {
  const int64_t need = shortest + 1 + (conv.thinking ? 1 : 0);
  if (limit >= need)
    return std::nullopt;
  const std::string param = conv.api == recipe::api_kind::responses ? "max_output_tokens" : "max_tokens";
  const std::string what = std::string(" the shortest output the requested format (schema or tool call) allows takes ") +
                           std::to_string(need) + " (with the end of the reply" +
                           (conv.thinking ? " and of the reasoning" : "") + ")";
  // (Anthropic's body puts the param before the message itself.)
  return request_error(conv.api, 400, "invalid_request_error",
                  named ? "The output limit is " + std::to_string(limit) + " tokens, but" + what + "; raise " + param +
                            " to at least " + std::to_string(need) + "."
                        : "No output limit was named, and what the context leaves after the prompt is " +
                            std::to_string(limit) + " tokens, but" + what + "; shorten the prompt.",
                  param);
}

} // namespace deepinfer::actors
