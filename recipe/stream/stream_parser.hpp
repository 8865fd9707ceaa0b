#pragma once

#include "recipe/prompt_segment.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/render/template_version.hpp"
#include "recipe/stream/kmp_matcher.hpp"
#include "recipe/stream/stream_event.hpp"
#include "recipe/stream/utf8_assembler.hpp"

#include <algorithm>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

class tokenizer;

/// Turns the engine's output tokens into reasoning / content / tool-call events (spec §4, §7).
///
/// `</think>`, `<think>` and EOS are recognised by token id, and so is `｜DSML｜` in V4.1; the rest of
/// each tag (`<`, ` invoke name="`) and all of V3.2's DSML are matched on text with KMP state kept
/// across chunks, so no byte is examined twice. A spelling typed with ordinary tokens (e.g. the text
/// `</think>`) is therefore content. Tool names are emitted when their closing quote arrives and
/// arguments stream as JSON fragments: string values escaped piece by piece, others passed through.
/// Following DeepSeek's own parser, newlines at the start of reasoning and content and right
/// before `</think>` or a tool block are dropped, and text after the tool block is discarded.
class stream_parser {
public:
  struct config {
    /// Generation starts in reasoning (the prompt ended with `<think>`).
    bool thinking = false;
    /// Tool call ids are this prefix plus the call's index; make it unique per request.
    std::string tool_id_prefix = "call_";
    /// Stop sequences (the request's `stop` / `stop_sequences`): the answer ends before the first
    /// one that appears in the content; it is not emitted and the finish event carries it.
    std::vector<std::string> stop = {};
    /// vLLM's `ignore_eos`: EOS is a hidden special like any other and the stream ends only by
    /// `finish` (the token limit).
    bool ignore_eos = false;
    /// vLLM's `stop_token_ids`: these ids end the answer like EOS; the finish event carries the
    /// id (`stop_token`).
    std::vector<token_id> stop_ids = {};
    /// vLLM's `include_stop_str_in_output`: the stop sequence, or the stop id's text, stays at
    /// the end of the content.
    bool include_stop = false;
    /// vLLM's `skip_special_tokens: false`: a generated special token that is not one of the
    /// template's markers (EOS, `<think>`, `</think>`, DSML) is written as its text.
    bool show_specials = false;
    /// The answer continues a message the prompt left open (conversation::continue_final): its
    /// first newlines are text, not the start of an answer to trim.
    bool continues = false;
  };

  /// Raw bytes of one token (the tokenizer's `token_bytes`); the view must outlive the call.
  using token_bytes_fn = std::function<std::string_view(token_id)>;
  /// Whether a generated id is a special token that is never text (empty: only the template's
  /// own specials are).
  using hidden_fn = std::function<bool(token_id)>;

  /// `specials` gives the marker ids and the template version (tag names differ by version).
  /// Generated specials other than the markers (`specials`' other entries, and every id for
  /// which `hidden` says so) are counted but never rendered as text.
  stream_parser(const config& cfg, const special_table& specials, token_bytes_fn token_bytes,
                hidden_fn hidden = {});

  /// The same with the token bytes of `tok`, which must outlive the parser; every added token
  /// the tokenizer marks special (e.g. `<｜place▁holder▁no▁611｜>`) is hidden.
  stream_parser(const config& cfg, const special_table& specials, const tokenizer& tok);

  /// Consumes the next tokens; returns the events they complete (valid until the next call).
  /// Tokens after EOS are ignored; EOS itself produces the `finish` event.
  std::span<const stream_event> feed(std::span<const token_id> ids);

  /// Ends the stream (e.g. `length` when the token limit is reached): releases held text and
  /// appends `finish`. A no-op returning no events once finished.
  std::span<const stream_event> finish(finish_reason why);

  bool finished() const noexcept { return phase_ == phase::done; }
  /// Completion and reasoning token counts so far (prompt fields are zero).
  usage_counts counts() const noexcept { return counts_; }
  /// Number of tool calls started so far.
  std::uint32_t tool_calls() const noexcept { return tool_index_ + (in_invoke_ ? 1 : 0); }

private:
  enum class phase : std::uint8_t { reasoning, content, tools, after_tools, done };
  enum class tool_state : std::uint8_t { between, tag, name, after_name, key, attrs, value };

  /// A special token that is never text unless `show_specials` (the template's other specials,
  /// the tokenizer's special added tokens).
  bool is_hidden(token_id id) const {
    return std::find(ignored_.begin(), ignored_.end(), id) != ignored_.end() || (hidden_ && hidden_(id));
  }
  void text(std::string_view s);
  void text_phase_byte(unsigned char c);
  void tool_byte(unsigned char c);
  void on_tag(std::size_t which);
  void close_invoke();
  void end_reasoning();
  void release_partial(stream_event::kind k);
  stream_event& push(stream_event::kind k);
  void emit(stream_event::kind k, std::string_view s);
  void emit_content(std::string_view s);
  void emit_event_text(stream_event::kind k, std::string_view s);
  void flush_stop_hold();
  void emit_unmarked(stream_event::kind k, std::string_view s);
  void emit_args(std::string_view s);
  void emit_value(std::string_view s);
  void do_finish(finish_reason why);
  stream_event::kind text_kind() const noexcept {
    return phase_ == phase::reasoning ? stream_event::kind::reasoning : stream_event::kind::content;
  }

  config cfg_;
  token_bytes_fn token_bytes_;
  hidden_fn hidden_;
  token_id eos_, think_open_, think_close_;
  std::optional<token_id> dsml_;
  std::vector<token_id> ignored_; // other specials the model should not emit
  phase phase_;
  std::vector<stream_event> events_; // reused; the first count_ are this call's
  std::size_t count_ = 0;
  usage_counts counts_;
  utf8_assembler utf8_;
  std::string scratch_;

  // Stop sequences over the content: matchers and the content held while it may start one.
  std::vector<kmp_matcher> stops_;
  std::string stop_hold_;

  // Reasoning / content phases.
  kmp_matcher tool_start_;
  /// Bytes of `tool_start_`'s pattern up to and with the DSML marker (`<` + marker): a partial
  /// match this long is a tool block the model began, not text.
  std::size_t tool_start_marked_ = 0;
  std::size_t pending_newlines_ = 0;
  bool leading_ = true;

  // Tool block.
  tool_state ts_ = tool_state::between;
  std::vector<std::string> tags_; // open invoke, open parameter, close invoke, close block
  std::string tag_;
  kmp_matcher param_close_;
  std::string name_, key_, attrs_;
  bool in_invoke_ = false;
  bool value_is_string_ = true;
  std::size_t params_ = 0;
  std::size_t value_bytes_ = 0;
  std::uint32_t tool_index_ = 0;
};

/// The ids `tok` lists as special added tokens (its `added_tokens` with `special: true`); `tok`
/// must outlive the function.
stream_parser::hidden_fn special_added_tokens(const tokenizer& tok);

} // namespace deepinfer::recipe
