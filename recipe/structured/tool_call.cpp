// Forced tool calls (tool_choice required / a named tool): the DSML markup of a call whose
// arguments follow the tool's parameter schema, built from the JSON Schema compiler's rules.
#include "recipe/structured/tool_call.hpp"

#include "recipe/structured/json_schema_impl.hpp"
#include "recipe/structured/token_trie.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace deepinfer::recipe::so {

namespace {

using json = nlohmann::ordered_json;

bool uses_ref(const json& v) {
  if (v.is_object()) {
    if (v.contains("$ref"))
      return true;
    for (const auto& [k, x] : v.items())
      if (uses_ref(x))
        return true;
  } else if (v.is_array())
    for (const auto& x : v)
      if (uses_ref(x))
        return true;
  return false;
}

/// A property read as raw text (`string="true"`): its schema says only "a string" (or one of
/// some strings). A string with a length bound, a pattern or a format is a JSON string
/// (`string="false"`) instead, whose value rule enforces them: raw text would leave them unchecked.
bool raw_string(const json& s) {
  return s.is_object() && s.value("type", json{}) == "string" && !s.contains("anyOf") && !s.contains("oneOf") &&
         !s.contains("allOf") && !s.contains("$ref") && !s.contains("minLength") && !s.contains("maxLength") &&
         !s.contains("pattern") && !s.contains("format");
}

class tool_call_builder {
public:
  tool_call_builder(const json& root, bool v41, budget& b, const json_options& opts)
      : sb_(root, b, opts), v41_(v41) {}

  std::shared_ptr<const grammar> build(const json& tools, bool parallel) {
    rule_nfa n;
    std::vector<rule_nfa::frag> invokes;
    for (const auto& t : tools)
      invokes.push_back(n.sym(invoke_rule(t)));
    auto one = n.alt(invokes);
    auto body = one;
    if (parallel) {
      // invoke ("\n" invoke)*
      std::vector<rule_nfa::frag> more{n.sym(text("\n")), n.alt(copy(n, tools))};
      body = n.seq(std::vector<rule_nfa::frag>{one, n.star(n.seq(more))});
    }
    std::vector<rule_nfa::frag> all{n.sym(markup("\n\n<", " calls>\n", "function_calls>\n")), body,
                                    n.sym(markup("\n</", " calls>", "function_calls>"))};
    auto f = n.seq(all);
    auto root = sb_.builder().declare();
    sb_.builder().define(root, std::move(n), f);
    return sb_.finish(root);
  }

private:
  std::vector<rule_nfa::frag> copy(rule_nfa& n, const json& tools) {
    std::vector<rule_nfa::frag> out;
    for (const auto& t : tools)
      out.push_back(n.sym(invoke_rule(t)));
    return out;
  }

  /// `pre` + DSML marker + the tag (V4.1: with its leading space; V3.2: its own name).
  symbol markup(const std::string& pre, const std::string& v41_tag, const std::string& v32_tag) {
    std::vector<rx> parts{rx::lit(pre)};
    if (v41_) {
      parts.push_back(rx::cp(dsml_code_point));
      parts.push_back(rx::lit(v41_tag));
    } else
      parts.push_back(rx::lit("｜DSML｜" + v32_tag));
    return sb_.exact((v41_ ? "4" : "3") + pre + "|" + v41_tag, rx::seq(std::move(parts)));
  }

  symbol text(const std::string& t) { return sb_.exact("t" + t, rx::lit(t)); }

  /// Raw string text: any code point but the DSML marker (and, for V3.2, no `<` that could start
  /// the closing tag: kept simple, `<` is not allowed there).
  symbol raw_text(const json& s) {
    if (s.contains("enum") || s.contains("const")) {
      std::vector<rx> alts;
      const auto& vals = s.contains("const") ? json::array({s["const"]}) : s["enum"];
      for (const auto& v : vals)
        if (v.is_string())
          alts.push_back(rx::lit(v.get<std::string>()));
      if (alts.empty())
        throw compile_error("a string enum of no strings");
      return sb_.exact("e" + vals.dump(), rx::alt(std::move(alts)));
    }
    auto ranges = complement(std::vector<cp_range>{v41_ ? cp_range{dsml_code_point, dsml_code_point} : cp_range{'<', '<'}});
    // One or more (a lexeme cannot match nothing): an empty value is the optional around it.
    return sb_.exact(v41_ ? "raw41" : "raw32", rx::plus(rx::set(std::move(ranges))));
  }

  symbol invoke_rule(const json& tool) {
    const auto name = tool.at("name").get<std::string>();
    if (auto it = invokes_.find(name); it != invokes_.end())
      return it->second;
    const json& params = tool.contains("parameters") ? tool["parameters"] : empty_;
    auto r = sb_.builder().declare();
    invokes_.emplace(name, r);
    rule_nfa n;
    std::vector<rule_nfa::frag> seq{n.sym(markup("<", " invoke name=\"" + name + "\">\n", "invoke name=\"" + name + "\">\n"))};
    const json props = params.is_object() && params.contains("properties") ? params["properties"] : json::object();
    std::vector<std::string> required;
    if (params.is_object() && params.contains("required"))
      for (const auto& x : params["required"])
        required.push_back(x.get<std::string>());
    if (props.empty())
      seq.push_back(n.sym(text("\n")));
    for (const auto& [key, schema] : props.items()) {
      const bool raw = raw_string(schema);
      std::vector<rule_nfa::frag> p{
        n.sym(markup("<", " parameter name=\"" + key + "\" string=\"" + (raw ? "true" : "false") + "\">",
                     "parameter name=\"" + key + "\" string=\"" + (raw ? "true" : "false") + "\">")),
        raw && !schema.contains("enum") && !schema.contains("const") ? n.opt(n.sym(raw_text(schema)))
                                                                      : n.sym(raw ? raw_text(schema) : sb_.value_rule(schema)),
        n.sym(markup("</", " parameter>\n", "parameter>\n"))};
      auto f = n.seq(p);
      const bool req = std::find(required.begin(), required.end(), key) != required.end();
      seq.push_back(req ? f : n.opt(f));
    }
    seq.push_back(n.sym(markup("</", " invoke>", "invoke>")));
    auto f = n.seq(seq);
    sb_.builder().define(r, std::move(n), f);
    return r;
  }

  detail::schema_builder sb_;
  bool v41_;
  json empty_ = json::object();
  std::map<std::string, symbol> invokes_;
};

} // namespace

std::shared_ptr<const grammar> compile_tool_calls(const json& spec, budget& b, const json_options& opts) {
  const auto& tools = spec.at("tools");
  if (!tools.is_array() || tools.empty())
    throw compile_error("a forced tool call needs at least one tool");
  if (tools.size() > 1)
    for (const auto& t : tools)
      if (uses_ref(t.value("parameters", json::object())))
        throw compile_error("'$ref' in the parameters of one of several tools; name the tool to call");
  for (const auto& t : tools)
    if (t.is_object() && t.contains("parameters"))
      detail::check_schema_shape(t["parameters"]);
  static const json no_params = json::object();
  const json& root = tools.size() == 1 && tools[0].contains("parameters") ? tools[0]["parameters"] : no_params;
  tool_call_builder builder(root, spec.value("v41", true), b, opts);
  return builder.build(tools, spec.value("parallel", false));
}

} // namespace deepinfer::recipe::so
