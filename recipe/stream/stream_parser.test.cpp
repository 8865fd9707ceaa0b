#include "recipe/stream/stream_parser.hpp"

#include "recipe/render/renderer.hpp"
#include "recipe/testdata/byte_vocab.hpp"
#include "recipe/testdata/samples.hpp"
#include "recipe/testdata/tokenizers.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>

using namespace deepinfer::recipe;

namespace {

const special_table& table(template_version v) { return test::real_table(v); }

using test::byte_base;
using test::byte_ids;
using test::byte_token;

// What a client rebuilds from the events.
struct rebuilt {
  std::string reasoning, content;
  std::vector<std::string> names, args;
  std::vector<finish_reason> finishes;
  bool operator==(const rebuilt&) const = default;
};

void apply(rebuilt& r, std::span<const stream_event> evs) {
  for (const auto& e : evs) {
    switch (e.type) {
      case stream_event::kind::reasoning: r.reasoning += e.text; break;
      case stream_event::kind::content: r.content += e.text; break;
      case stream_event::kind::tool_call_start:
        BOOST_REQUIRE_EQUAL(e.tool_index, r.names.size());
        r.names.push_back(e.tool_name);
        r.args.emplace_back();
        break;
      case stream_event::kind::tool_call_arguments:
        BOOST_REQUIRE_LT(e.tool_index, r.args.size());
        r.args[e.tool_index] += e.text;
        break;
      case stream_event::kind::tool_call_end: break;
      case stream_event::kind::finish: r.finishes.push_back(e.reason); break;
    }
  }
}

using bytes_fn = stream_parser::token_bytes_fn;

rebuilt run(const std::vector<token_id>& ids, const std::vector<std::size_t>& cuts, template_version v,
            bool thinking, const bytes_fn& bytes = byte_token) {
  stream_parser p({thinking, "call_"}, table(v), bytes);
  rebuilt r;
  std::size_t at = 0;
  for (auto c : cuts) {
    apply(r, p.feed(std::span(ids).subspan(at, c - at)));
    at = c;
  }
  apply(r, p.feed(std::span(ids).subspan(at)));
  apply(r, p.finish(finish_reason::length));
  return r;
}

// Tokens of the turn: one per byte, or the real tokenizer's.
enum class vocab { bytes, real };

void check_every_chunking(template_version v, bool thinking, bool dsml_spellings, vocab voc = vocab::bytes) {
  const message m = test::sample_turn(dsml_spellings);
  const auto segs = render_completion(m, table(v), thinking);
  std::vector<token_id> ids;
  bytes_fn bytes = byte_token;
  if (voc == vocab::real) {
    const auto& tok = test::real_tokenizer(v);
    ids = tok.encode(segs);
    bytes = [&tok](token_id id) { return tok.token_bytes(id); };
    // Ordinary-token spellings really are ordinary tokens: the only marker ids are the placed ones.
    const auto close = *table(v).id(spelling::think_close);
    BOOST_TEST(std::count(ids.begin(), ids.end(), close) == (thinking ? 1 : 0));
  } else {
    ids = byte_ids(segs);
  }
  auto run = [&](const std::vector<token_id>& i, const std::vector<std::size_t>& c, template_version ver, bool th) {
    return ::run(i, c, ver, th, bytes);
  };
  const rebuilt whole = run(ids, {}, v, thinking);
  // The original turn comes back.
  BOOST_TEST(whole.reasoning == (thinking ? *m.reasoning : std::string()));
  BOOST_TEST(whole.content == m.content.front().value);
  BOOST_REQUIRE_EQUAL(whole.names.size(), m.tool_calls.size());
  for (std::size_t i = 0; i < m.tool_calls.size(); ++i) {
    BOOST_TEST(whole.names[i] == m.tool_calls[i].name);
    auto got = nlohmann::json::parse(whole.args[i], nullptr, false);
    BOOST_REQUIRE_MESSAGE(!got.is_discarded(), "arguments are not JSON: " << whole.args[i]);
    BOOST_TEST(got == nlohmann::json::parse(m.tool_calls[i].arguments));
  }
  BOOST_REQUIRE_EQUAL(whole.finishes.size(), 1u);
  BOOST_TEST((whole.finishes[0] == finish_reason::tool_calls));
  // Every chunk boundary alone, then random chunkings: identical events per field.
  for (std::size_t c = 1; c < ids.size(); ++c)
    BOOST_REQUIRE(run(ids, {c}, v, thinking) == whole);
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<std::size_t> cuts;
    std::size_t at = 0;
    const std::size_t max_chunk = 1 + rng() % 12;
    while (true) {
      at += 1 + rng() % max_chunk;
      if (at >= ids.size())
        break;
      cuts.push_back(at);
    }
    BOOST_REQUIRE(run(ids, cuts, v, thinking) == whole);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(stream_parser_suite)

BOOST_AUTO_TEST_CASE(dsv41_turn_survives_every_chunking_and_ordinary_tag_spellings_stay_text) {
  check_every_chunking(template_version::dsv41, true, true);
  check_every_chunking(template_version::dsv41, false, true);
}

BOOST_AUTO_TEST_CASE(dsv32_turn_survives_every_chunking) {
  check_every_chunking(template_version::dsv32, true, false);
  check_every_chunking(template_version::dsv32, false, false);
}

BOOST_AUTO_TEST_CASE(real_tokens_survive_every_chunking_in_both_versions) {
  check_every_chunking(template_version::dsv41, true, true, vocab::real);
  check_every_chunking(template_version::dsv41, false, false, vocab::real);
  check_every_chunking(template_version::dsv32, true, false, vocab::real);
  check_every_chunking(template_version::dsv32, false, false, vocab::real);
}

BOOST_AUTO_TEST_CASE(plain_answer_finishes_with_stop_and_length_is_reported) {
  const auto& t = table(template_version::dsv41);
  message m;
  m.content.push_back(content_part::text("Hello"));
  auto ids = byte_ids(render_completion(m, t, false));
  auto r = run(ids, {}, template_version::dsv41, false);
  BOOST_TEST(r.content == "Hello");
  BOOST_REQUIRE_EQUAL(r.finishes.size(), 1u);
  BOOST_TEST((r.finishes[0] == finish_reason::stop));
  ids.pop_back(); // no EOS: the caller stops at the token limit
  r = run(ids, {}, template_version::dsv41, false);
  BOOST_TEST((r.finishes.at(0) == finish_reason::length));
}

// A turn cut off by the token limit inside the tool block's opening tag, once past its DSML
// marker, shows its content only: the tag was markup the model began, not text.
BOOST_AUTO_TEST_CASE(a_tool_tag_cut_by_the_token_limit_past_its_marker_is_not_shown_as_text) {
  for (auto v : {template_version::dsv41, template_version::dsv32}) {
    message m = test::sample_turn(false);
    m.reasoning.reset();
    const std::string content = m.content.front().value;
    const auto ids = byte_ids(render_completion(m, table(v), false));
    // Cuts after the marker up to the tag's end: " calls" (V4.1) or "function_calls" (V3.2).
    const std::size_t after_marker = v == template_version::dsv41 ? 7 : 15;
    std::size_t exact = 0;
    for (std::size_t n = 1; n < ids.size(); ++n) {
      const auto r = run(std::vector<token_id>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n)), {}, v, false);
      BOOST_TEST_CONTEXT("version " << static_cast<int>(v) << ", first " << n << " tokens") {
        BOOST_TEST(r.content.find("｜DSML｜") == std::string::npos);
        if (r.names.empty() && r.content == content)
          ++exact;
      }
    }
    BOOST_TEST(exact >= after_marker);
  }
}

BOOST_AUTO_TEST_CASE(counts_reasoning_tokens_up_to_think_close) {
  const auto& t = table(template_version::dsv41);
  message m;
  m.reasoning = "ab";
  m.content.push_back(content_part::text("cd"));
  const auto ids = byte_ids(render_completion(m, t, true));
  stream_parser p({true, "call_"}, t, byte_token);
  p.feed(ids);
  BOOST_TEST(p.counts().completion_tokens == 6);  // a b </think> c d EOS
  BOOST_TEST(p.counts().reasoning_tokens == 3);
  BOOST_TEST(p.finished());
}

BOOST_AUTO_TEST_CASE(broken_utf8_becomes_replacement_characters) {
  const auto& t = table(template_version::dsv41);
  std::vector<token_id> ids = {byte_base + 0xE4, byte_base + 0xB8, byte_base + 'A', byte_base + 0xFF,
                               *t.id(spelling::eos)};
  auto r = run(ids, {1}, template_version::dsv41, false);
  BOOST_TEST(r.content == "\xEF\xBF\xBD" "A\xEF\xBF\xBD");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stop_sequences)

BOOST_AUTO_TEST_CASE(content_ends_before_the_first_stop_sequence_in_every_chunking) {
  const auto& t = test::real_table(template_version::dsv41);
  message m;
  m.reasoning = "think STOP here is reasoning, not content";
  m.content.push_back(content_part::text("alpha beta 中文 END gamma ENDING"));
  const auto ids = byte_ids(render_completion(m, t, true));
  stream_parser::config cfg{true, "call_", {"ENDING", "文 EN", "xyz"}};
  for (std::size_t cut = 0; cut < ids.size(); ++cut) {
    stream_parser p(cfg, t, byte_token);
    std::string reasoning, content, stop;
    int finishes = 0;
    auto take = [&](std::span<const stream_event> evs) {
      for (const auto& e : evs) {
        if (e.type == stream_event::kind::reasoning)
          reasoning += e.text;
        if (e.type == stream_event::kind::content)
          content += e.text;
        if (e.type == stream_event::kind::finish) {
          ++finishes;
          stop = e.text;
          BOOST_TEST((e.reason == finish_reason::stop));
        }
      }
    };
    take(p.feed(std::span(ids).subspan(0, cut)));
    take(p.feed(std::span(ids).subspan(cut)));
    take(p.finish(finish_reason::length));
    BOOST_TEST(reasoning == *m.reasoning); // stop sequences apply to the answer only
    BOOST_TEST(content == "alpha beta 中"); // "文 EN" comes before "ENDING"
    BOOST_TEST(stop == "文 EN");
    BOOST_TEST(finishes == 1);
  }
}

BOOST_AUTO_TEST_CASE(held_partial_stop_is_released_when_the_answer_ends) {
  const auto& t = test::real_table(template_version::dsv32);
  message m;
  m.content.push_back(content_part::text("value EN"));
  const auto ids = byte_ids(render_completion(m, t, false));
  stream_parser p({false, "call_", {"ENDING"}}, t, byte_token);
  rebuilt r;
  apply(r, p.feed(ids));
  BOOST_TEST(r.content == "value EN");
  BOOST_TEST((r.finishes.at(0) == finish_reason::stop));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stop_sequences_edge)

// (Moved from actors/stop_filter, which the parser replaced.)
BOOST_AUTO_TEST_CASE(a_partial_stop_that_fails_is_released_in_every_chunking) {
  const auto& t = test::real_table(template_version::dsv41);
  message m;
  m.content.push_back(content_part::text("EN then ENx"));
  const auto ids = byte_ids(render_completion(m, t, false));
  for (std::size_t cut = 0; cut < ids.size(); ++cut) {
    stream_parser p({false, "call_", {"END"}}, t, byte_token);
    rebuilt r;
    apply(r, p.feed(std::span(ids).subspan(0, cut)));
    apply(r, p.feed(std::span(ids).subspan(cut)));
    BOOST_TEST(r.content == "EN then ENx");
    BOOST_TEST(r.finishes.size() == 1u);
  }
}

BOOST_AUTO_TEST_CASE(the_earliest_of_several_stops_wins) {
  const auto& t = test::real_table(template_version::dsv41);
  message m;
  m.content.push_back(content_part::text("aazzab"));
  const auto ids = byte_ids(render_completion(m, t, false));
  stream_parser p({false, "call_", {"zz", "b"}}, t, byte_token);
  std::string content, stop;
  for (const auto& e : p.feed(ids)) {
    if (e.type == stream_event::kind::content)
      content += e.text;
    if (e.type == stream_event::kind::finish)
      stop = e.text;
  }
  BOOST_TEST(content == "aa");
  BOOST_TEST(stop == "zz");
  BOOST_TEST(p.finished());
}

BOOST_AUTO_TEST_CASE(stop_at_the_start_of_the_answer_emits_no_empty_event) {
  // Found by fuzz_stream_parser: a stop sequence matched with nothing before it.
  const auto& t = test::real_table(template_version::dsv41);
  message m;
  m.content.push_back(content_part::text("\n\nSTOP rest"));
  const auto ids = byte_ids(render_completion(m, t, false));
  stream_parser p({false, "call_", {"STOP"}}, t, byte_token);
  const auto evs = p.feed(ids);
  BOOST_REQUIRE_EQUAL(evs.size(), 1u);
  BOOST_TEST((evs[0].type == stream_event::kind::finish));
  BOOST_TEST(evs[0].text == "STOP");
}

// vLLM's include_stop_str_in_output: the matched stop sequence stays at the end of the content.
BOOST_AUTO_TEST_CASE(include_stop_keeps_the_stop_sequence_in_every_chunking) {
  const auto& t = test::real_table(template_version::dsv41);
  message m;
  m.content.push_back(content_part::text("alpha ENDING beta"));
  const auto ids = byte_ids(render_completion(m, t, false));
  stream_parser::config cfg{false, "call_", {"END"}};
  cfg.include_stop = true;
  for (std::size_t cut = 0; cut < ids.size(); ++cut) {
    stream_parser p(cfg, t, byte_token);
    std::string content, stop;
    for (auto part : {std::span(ids).subspan(0, cut), std::span(ids).subspan(cut)})
      for (const auto& e : p.feed(part)) {
        if (e.type == stream_event::kind::content)
          content += e.text;
        if (e.type == stream_event::kind::finish)
          stop = e.text;
      }
    BOOST_TEST(content == "alpha END");
    BOOST_TEST(stop == "END");
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(stop_token_ids)

// vLLM's stop_token_ids: the id ends the answer with reason stop and is named by the finish event;
// its text is left out unless include_stop, and a special one shows only with show_specials.
BOOST_AUTO_TEST_CASE(a_stop_id_ends_the_answer_and_is_reported) {
  const auto& tok = test::real_tokenizer(template_version::dsv41);
  const auto& t = table(template_version::dsv41);
  const auto hi = tok.encode("Hi there");
  const auto dot = tok.encode(".");
  BOOST_REQUIRE_EQUAL(dot.size(), 1u);
  const auto placeholder = *tok.special_id("<｜place▁holder▁no▁611｜>");
  struct expect {
    token_id stop;
    bool include, show;
    std::string content;
  };
  for (const auto& x : {expect{dot[0], false, false, "Hi there"}, expect{dot[0], true, false, "Hi there."},
                        expect{placeholder, true, false, "Hi there"}, expect{placeholder, false, true, "Hi there"},
                        expect{placeholder, true, true, "Hi there<｜place▁holder▁no▁611｜>"}}) {
    stream_parser::config cfg{false, "call_"};
    cfg.stop_ids = {x.stop};
    cfg.include_stop = x.include;
    cfg.show_specials = x.show;
    stream_parser p(cfg, t, tok);
    std::vector<token_id> out = hi;
    out.push_back(x.stop);
    out.insert(out.end(), hi.begin(), hi.end()); // after the stop: ignored
    std::string content;
    int32_t stopped_by = -2;
    for (const auto& e : p.feed(out)) {
      if (e.type == stream_event::kind::content)
        content += e.text;
      if (e.type == stream_event::kind::finish) {
        BOOST_TEST((e.reason == finish_reason::stop));
        BOOST_TEST(e.text.empty());
        stopped_by = e.stop_token;
      }
    }
    BOOST_TEST(content == x.content);
    BOOST_TEST(stopped_by == x.stop);
    BOOST_TEST(p.counts().completion_tokens == static_cast<std::int64_t>(hi.size() + 1));
  }
  // EOS still ends it, with no stop id named; a stop id's text completing a stop sequence ends it
  // by the sequence.
  stream_parser::config cfg{false, "call_", {"e."}};
  cfg.stop_ids = {dot[0]};
  cfg.include_stop = true;
  stream_parser p(cfg, t, tok);
  std::vector<token_id> out = hi;
  out.push_back(dot[0]);
  std::string content;
  for (const auto& e : p.feed(out)) {
    if (e.type == stream_event::kind::content)
      content += e.text;
    if (e.type == stream_event::kind::finish) {
      BOOST_TEST(e.text == "e.");
      BOOST_TEST(e.stop_token == -1);
    }
  }
  BOOST_TEST(content == "Hi there.");
  stream_parser q({false, "call_"}, t, tok);
  out = hi;
  out.push_back(*t.id(spelling::eos));
  const auto evs = q.feed(out);
  BOOST_REQUIRE(!evs.empty());
  BOOST_TEST(evs.back().stop_token == -1);
}

// vLLM's skip_special_tokens: false: other specials are text; the template's markers still work.
BOOST_AUTO_TEST_CASE(show_specials_writes_special_tokens_as_text_but_markers_still_work) {
  const auto& tok = test::real_tokenizer(template_version::dsv41);
  const auto& t = table(template_version::dsv41);
  const auto placeholder = *tok.special_id("<｜place▁holder▁no▁611｜>");
  auto ids = tok.encode("Hi");
  std::vector<token_id> out = {*t.id(spelling::think_close)};
  out.insert(out.end(), ids.begin(), ids.end());
  out.push_back(placeholder);
  out.push_back(*t.id(spelling::eos));
  stream_parser::config cfg{true, "call_"};
  cfg.show_specials = true;
  stream_parser p(cfg, t, tok);
  rebuilt r;
  apply(r, p.feed(out));
  BOOST_TEST(r.reasoning.empty());
  BOOST_TEST(r.content == "Hi<｜place▁holder▁no▁611｜>");
  BOOST_REQUIRE_EQUAL(r.finishes.size(), 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(special_tokens)

BOOST_AUTO_TEST_CASE(generated_special_tokens_are_never_text_but_markers_still_work) {
  for (auto v : {template_version::dsv41, template_version::dsv32}) {
    const auto& tok = test::real_tokenizer(v);
    const auto& t = table(v);
    const auto placeholder = tok.special_id("<｜place▁holder▁no▁611｜>");
    BOOST_REQUIRE(placeholder);
    auto ids = tok.encode("Hi");
    std::vector<token_id> out = {*t.id(spelling::think_close)};
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(*placeholder);
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(*t.id(spelling::eos));
    stream_parser p({true, "call_"}, t, tok);
    rebuilt r;
    apply(r, p.feed(out));
    BOOST_TEST(r.content == "HiHi");
    BOOST_REQUIRE_EQUAL(r.finishes.size(), 1u);
    BOOST_TEST(p.counts().completion_tokens == static_cast<std::int64_t>(out.size()));
  }
}

BOOST_AUTO_TEST_SUITE_END()
