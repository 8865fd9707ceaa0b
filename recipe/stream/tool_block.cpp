// The tool-block half of stream_parser: DSML tags after `<｜DSML｜ calls>` (spec §3.1, §4 step 3).

#include "recipe/stream/stream_parser.hpp"

#include "recipe/json_text.hpp"

namespace deepinfer::recipe {

namespace {

constexpr std::size_t max_field = 4096; // tool names, keys, attributes

} // namespace

void stream_parser::tool_byte(unsigned char c) {
  const char ch = static_cast<char>(c);
  switch (ts_) {
    case tool_state::between:
      // Text between tags is skipped (lenient, as DeepSeek's parser); a tag starts at '<'.
      if (ch == '<') {
        tag_.assign(1, '<');
        ts_ = tool_state::tag;
      }
      return;
    case tool_state::tag: {
      tag_ += ch;
      bool prefix = false;
      for (std::size_t t = 0; t < tags_.size(); ++t) {
        const auto& cand = tags_[t];
        if (cand.size() >= tag_.size() && cand.compare(0, tag_.size(), tag_) == 0) {
          if (cand.size() == tag_.size()) {
            on_tag(t);
            return;
          }
          prefix = true;
        }
      }
      // Every tag has its only '<' in front, so on a mismatch the next tag can only start at c.
      if (!prefix) {
        if (ch == '<')
          tag_.assign(1, '<');
        else
          ts_ = tool_state::between;
      }
      return;
    }
    case tool_state::name:
      if (ch == '"') {
        auto& e = push(stream_event::kind::tool_call_start);
        e.tool_id = cfg_.tool_id_prefix + std::to_string(tool_index_);
        e.tool_name = name_;
        ts_ = tool_state::after_name;
      } else if (name_.size() < max_field) {
        name_ += ch;
      }
      return;
    case tool_state::after_name:
      if (ch == '>')
        ts_ = tool_state::between;
      return;
    case tool_state::key:
      if (ch == '"') {
        attrs_.clear();
        ts_ = tool_state::attrs;
      } else if (key_.size() < max_field) {
        key_ += ch;
      }
      return;
    case tool_state::attrs:
      if (ch != '>') {
        if (attrs_.size() < max_field)
          attrs_ += ch;
        return;
      }
      {
        value_is_string_ = attrs_.find("string=\"false\"") == std::string::npos;
        std::string head = params_++ == 0 ? "{" : ", ";
        append_json_string(head, key_);
        head += ": ";
        if (value_is_string_)
          head += '"';
        emit_args(head);
        value_bytes_ = 0;
        param_close_.reset();
        ts_ = tool_state::value;
      }
      return;
    case tool_state::value: {
      const std::size_t before = param_close_.state();
      const std::size_t after = param_close_.step(c);
      if (param_close_.matched()) {
        param_close_.reset();
        if (value_is_string_)
          emit_args("\"");
        else if (value_bytes_ == 0)
          emit_args("null"); // an empty non-string value would make the JSON invalid
        ts_ = tool_state::between;
        return;
      }
      if (after == before + 1)
        return;
      const std::size_t released = before + 1 - after;
      // Released pattern bytes: a `｜DSML｜` token inside a value is shown as its spelling.
      for (char pc : std::string_view(param_close_.pattern()).substr(0, std::min(released, before)))
        emit_value(pc == '\xF9' ? spelling::dsml : std::string_view(&pc, 1));
      if (released > before && c < 0xF8)
        emit_value(std::string_view(&ch, 1));
      return;
    }
  }
}

void stream_parser::on_tag(std::size_t which) {
  switch (which) {
    case 0: // <D invoke name="
      if (in_invoke_)
        close_invoke();
      in_invoke_ = true;
      params_ = 0;
      name_.clear();
      ts_ = tool_state::name;
      return;
    case 1: // <D parameter name="
      if (!in_invoke_) {
        ts_ = tool_state::between;
        return;
      }
      key_.clear();
      ts_ = tool_state::key;
      return;
    case 2: // </D invoke>
      if (in_invoke_)
        close_invoke();
      ts_ = tool_state::between;
      return;
    default: // </D calls>
      if (in_invoke_)
        close_invoke();
      phase_ = phase::after_tools;
      return;
  }
}

void stream_parser::close_invoke() {
  emit_args(params_ == 0 ? "{}" : "}");
  push(stream_event::kind::tool_call_end);
  in_invoke_ = false;
  ++tool_index_;
}

void stream_parser::emit_args(std::string_view s) {
  if (s.empty())
    return;
  if (count_ == 0 || events_[count_ - 1].type != stream_event::kind::tool_call_arguments)
    push(stream_event::kind::tool_call_arguments);
  events_[count_ - 1].text += s;
}

void stream_parser::emit_value(std::string_view s) {
  if (s.empty())
    return;
  value_bytes_ += s.size();
  if (!value_is_string_) {
    emit_args(s);
    return;
  }
  if (count_ == 0 || events_[count_ - 1].type != stream_event::kind::tool_call_arguments)
    push(stream_event::kind::tool_call_arguments);
  append_json_escaped(events_[count_ - 1].text, s);
}

} // namespace deepinfer::recipe
