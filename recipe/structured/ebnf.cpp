#include "recipe/structured/ebnf.hpp"

#include "recipe/structured/regex_parser.hpp"

namespace deepinfer::recipe::so {

std::shared_ptr<const grammar> compile_regex(std::string_view pattern, budget& b) {
  grammar_builder gb{b};
  auto p = parse_regex(pattern, spelling::raw);
  auto lx = gb.lexeme(byte_dfa::of(p.body, b));
  auto r = gb.declare();
  rule_nfa n;
  auto f = n.sym(lx);
  gb.define(r, std::move(n), f);
  return gb.finish(r);
}

std::shared_ptr<const grammar> compile_ebnf(std::string_view, budget&) {
  throw compile_error("grammar constraints are not implemented yet");
}

} // namespace deepinfer::recipe::so
