#include "recipe/stream/stream_parser.hpp"

#include "recipe/json_text.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <algorithm>

namespace deepinfer::recipe {

namespace {

// Token markers inside the parser's text: bytes that complete UTF-8 never contains.
constexpr char mark_think_close = '\xF8';
constexpr char mark_dsml = '\xF9';
constexpr char mark_think_open = '\xFA';
bool is_mark(unsigned char c) { return c >= 0xF8; }

} // namespace

stream_parser::hidden_fn special_added_tokens(const tokenizer& tok) {
  return [&tok](token_id id) {
    const auto* a = tok.find_added(id);
    return a != nullptr && a->special;
  };
}

namespace {

} // namespace

stream_parser::stream_parser(const config& cfg, const special_table& specials, token_bytes_fn token_bytes,
                             hidden_fn hidden)
    : cfg_(cfg), token_bytes_(std::move(token_bytes)), hidden_(std::move(hidden)), eos_(*specials.id(spelling::eos)),
      think_open_(*specials.id(spelling::think_open)), think_close_(*specials.id(spelling::think_close)),
      phase_(cfg.thinking ? phase::reasoning : phase::content), tool_start_(""), param_close_("") {
  const bool v41 = specials.version() == template_version::dsv41;
  std::string d(spelling::dsml);
  if (v41) {
    dsml_ = specials.id(spelling::dsml);
    d = std::string(1, mark_dsml);
  }
  const std::string block = v41 ? " calls" : "function_calls";
  const std::string invoke = v41 ? " invoke" : "invoke";
  const std::string param = v41 ? " parameter" : "parameter";
  tool_start_ = kmp_matcher("<" + d + block + ">");
  tool_start_marked_ = 1 + d.size();
  param_close_ = kmp_matcher("</" + d + param + ">");
  tags_ = {"<" + d + invoke + " name=\"", "<" + d + param + " name=\"", "</" + d + invoke + ">",
           "</" + d + block + ">"};
  leading_ = !cfg_.continues;
  for (const auto& st : cfg_.stop)
    if (!st.empty())
      stops_.emplace_back(st);
  for (const auto& [s, id] : specials.entries())
    if (id != eos_ && id != think_open_ && id != think_close_ && (!dsml_ || id != *dsml_))
      ignored_.push_back(id);
}

stream_parser::stream_parser(const config& cfg, const special_table& specials, const tokenizer& tok)
    : stream_parser(cfg, specials, [&tok](token_id id) { return tok.token_bytes(id); },
                    special_added_tokens(tok)) {}

stream_event& stream_parser::push(stream_event::kind k) {
  // Event objects (and their string buffers) are reused across calls: no allocation per token.
  if (count_ == events_.size())
    events_.emplace_back();
  auto& e = events_[count_++];
  e.type = k;
  e.text.clear();
  e.tool_index = tool_index_;
  e.tool_id.clear();
  e.tool_name.clear();
  e.reason = finish_reason::stop;
  e.stop_token = -1;
  return e;
}

std::span<const stream_event> stream_parser::feed(std::span<const token_id> ids) {
  count_ = 0;
  for (const token_id id : ids) {
    if (phase_ == phase::done)
      break;
    ++counts_.completion_tokens;
    if (phase_ == phase::reasoning)
      ++counts_.reasoning_tokens;
    if (id == eos_ && !cfg_.ignore_eos) {
      do_finish(finish_reason::stop);
      break;
    }
    if (!cfg_.stop_ids.empty() && std::find(cfg_.stop_ids.begin(), cfg_.stop_ids.end(), id) != cfg_.stop_ids.end()) {
      // vLLM leaves a stop id's text out unless asked (then a special one only as it would
      // show any special); a template marker used as a stop id is never text.
      const bool marker = id == eos_ || id == think_open_ || id == think_close_ || (dsml_ && id == *dsml_);
      if (cfg_.include_stop && !marker && (cfg_.show_specials || !is_hidden(id))) {
        scratch_.clear();
        utf8_.push(token_bytes_(id), scratch_);
        text(scratch_);
      }
      if (phase_ == phase::done)
        break; // its text completed a stop sequence
      do_finish(finish_reason::stop);
      if (count_ > 0 && events_[count_ - 1].type == stream_event::kind::finish)
        events_[count_ - 1].stop_token = id;
      break;
    }
    if (id == eos_ && !cfg_.show_specials)
      continue; // ignore_eos: a hidden special like any other
    char mark = 0;
    if (id == think_close_)
      mark = mark_think_close;
    else if (id == think_open_)
      mark = mark_think_open;
    else if (dsml_ && id == *dsml_)
      mark = mark_dsml;
    else if (!cfg_.show_specials && is_hidden(id))
      continue; // a special token is never text
    scratch_.clear();
    if (mark) {
      utf8_.flush(scratch_); // a character cut off by a marker token is broken
      scratch_ += mark;
    } else {
      utf8_.push(token_bytes_(id), scratch_);
    }
    text(scratch_);
  }
  return {events_.data(), count_};
}

std::span<const stream_event> stream_parser::finish(finish_reason why) {
  count_ = 0;
  if (phase_ != phase::done)
    do_finish(why);
  return {events_.data(), count_};
}

void stream_parser::do_finish(finish_reason why) {
  scratch_.clear();
  utf8_.flush(scratch_);
  text(scratch_);
  if (phase_ == phase::reasoning || phase_ == phase::content) {
    // Cut off by the token limit in the middle of a tool block's opening tag, past its DSML
    // marker: the model was writing a call, and the tag's start is markup, not text to show.
    if (why == finish_reason::length && tool_start_.state() >= tool_start_marked_) {
      tool_start_.reset();
      pending_newlines_ = 0;
    }
    release_partial(text_kind());
    emit(text_kind(), std::string(pending_newlines_, '\n'));
    pending_newlines_ = 0;
  }
  if (phase_ == phase::done)
    return; // a stop sequence in the released text ended the stream
  flush_stop_hold();
  if (why == finish_reason::stop && tool_calls() > 0)
    why = finish_reason::tool_calls;
  phase_ = phase::done;
  push(stream_event::kind::finish).reason = why;
}

void stream_parser::text(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    if (phase_ == phase::reasoning || phase_ == phase::content) {
      // Fast path: a run of bytes that cannot start or continue anything special.
      if (tool_start_.state() == 0 && !leading_ && pending_newlines_ == 0) {
        const char first = tool_start_.pattern()[0];
        std::size_t j = i;
        while (j < n && p[j] != '\n' && p[j] != static_cast<unsigned char>(first) && !is_mark(p[j]))
          ++j;
        if (j > i) {
          emit(text_kind(), s.substr(i, j - i));
          i = j;
          continue;
        }
      }
      text_phase_byte(p[i++]);
    } else if (phase_ == phase::tools) {
      tool_byte(p[i++]);
    } else {
      return; // after the tool block (invalid) or done: discarded
    }
  }
}

void stream_parser::release_partial(stream_event::kind k) {
  const std::size_t held = tool_start_.state();
  if (held == 0)
    return;
  emit(k, std::string(pending_newlines_, '\n'));
  pending_newlines_ = 0;
  emit_unmarked(k, std::string_view(tool_start_.pattern()).substr(0, held));
  tool_start_.reset();
}

void stream_parser::end_reasoning() {
  release_partial(stream_event::kind::reasoning);
  pending_newlines_ = 0; // newlines right before </think> are dropped
  phase_ = phase::content;
  leading_ = true;
}

void stream_parser::text_phase_byte(unsigned char c) {
  const auto k = text_kind();
  if (c == static_cast<unsigned char>(mark_think_close) || c == static_cast<unsigned char>(mark_think_open)) {
    if (phase_ == phase::reasoning && c == static_cast<unsigned char>(mark_think_close))
      end_reasoning();
    // A stray <think> anywhere or </think> in content is skipped as invalid.
    return;
  }
  if (c == '\n') {
    release_partial(k);
    if (!leading_)
      ++pending_newlines_;
    return;
  }
  leading_ = false;
  const std::size_t before = tool_start_.state();
  const std::size_t after = tool_start_.step(c);
  if (tool_start_.matched()) {
    // Tool block: the newlines before it belong to the block (spec §4 step 2).
    pending_newlines_ = 0;
    tool_start_.reset();
    flush_stop_hold();
    phase_ = phase::tools;
    ts_ = tool_state::between;
    return;
  }
  if (after == before + 1)
    return; // the partial match grew: hold
  // Release what fell out of the partial match: the first (before + 1 - after) bytes of
  // pattern[0, before) + c.
  const std::size_t released = before + 1 - after;
  emit(k, std::string(pending_newlines_, '\n'));
  pending_newlines_ = 0;
  const auto& pat = tool_start_.pattern();
  emit_unmarked(k, std::string_view(pat).substr(0, std::min(released, before)));
  if (released > before && !is_mark(c)) {
    const char ch = static_cast<char>(c);
    emit(k, std::string_view(&ch, 1));
  }
}

void stream_parser::emit_unmarked(stream_event::kind k, std::string_view s) {
  // Pattern bytes released after a failed match: a `｜DSML｜` token that did not start a tag is
  // shown as its spelling.
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == mark_dsml) {
      emit(k, s.substr(run, i - run));
      emit(k, spelling::dsml);
      run = i + 1;
    }
  emit(k, s.substr(run));
}

void stream_parser::emit(stream_event::kind k, std::string_view s) {
  if (s.empty() || phase_ == phase::done)
    return;
  if (k == stream_event::kind::content && !stops_.empty())
    emit_content(s);
  else
    emit_event_text(k, s);
}

void stream_parser::emit_event_text(stream_event::kind k, std::string_view s) {
  if (s.empty())
    return;
  if (count_ == 0 || events_[count_ - 1].type != k)
    push(k);
  events_[count_ - 1].text += s;
}

void stream_parser::emit_content(std::string_view s) {
  // Each content byte advances every stop matcher once; only the longest partial match is held.
  for (const char c : s) {
    stop_hold_ += c;
    for (auto& m : stops_) {
      m.step(static_cast<unsigned char>(c));
      if (!m.matched())
        continue;
      if (!cfg_.include_stop)
        stop_hold_.resize(stop_hold_.size() - m.pattern().size());
      emit_event_text(stream_event::kind::content, stop_hold_);
      stop_hold_.clear();
      phase_ = phase::done;
      auto& e = push(stream_event::kind::finish);
      e.reason = finish_reason::stop;
      e.text = m.pattern();
      return;
    }
  }
  std::size_t held = 0;
  for (const auto& m : stops_)
    held = std::max(held, m.state());
  if (stop_hold_.size() > held) {
    emit_event_text(stream_event::kind::content, std::string_view(stop_hold_).substr(0, stop_hold_.size() - held));
    stop_hold_.erase(0, stop_hold_.size() - held);
  }
}

void stream_parser::flush_stop_hold() {
  if (!stop_hold_.empty())
    emit_event_text(stream_event::kind::content, stop_hold_);
  stop_hold_.clear();
}

} // namespace deepinfer::recipe
