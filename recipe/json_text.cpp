#include "recipe/json_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace deepinfer::recipe {

void append_json_escaped(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::size_t run = 0; // start of the pending run of bytes that need no escape
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 15];
    }
  }
  out.append(s.data() + run, s.size() - run);
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  append_json_escaped(out, s);
  out += '"';
}

namespace {

// Python's float repr: the shortest round-trip digits, written positionally when the decimal
// exponent is in [-4, 16), else as d.ddde+XX (at least two exponent digits).
void append_python_float(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "NaN";
    return;
  }
  if (std::isinf(d)) {
    out += d < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
  bool neg = false;
  if (!sci.empty() && sci.front() == '-') {
    neg = true;
    sci.remove_prefix(1);
  }
  const auto e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos))
    if (c != '.')
      digits += c;
  const int exp = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  if (neg)
    out += '-';
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exp - 1), '0');
      out += digits;
    } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
      out += digits;
      out.append(static_cast<std::size_t>(exp) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<std::size_t>(exp) + 1);
      out += '.';
      out.append(digits, static_cast<std::size_t>(exp) + 1);
    }
    return;
  }
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  out += 'e';
  out += exp < 0 ? '-' : '+';
  const int a = std::abs(exp);
  if (a < 10)
    out += '0';
  out += std::to_string(a);
}

} // namespace

void append_python_json(std::string& out, const nlohmann::ordered_json& v) {
  using t = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case t::null: out += "null"; break;
    case t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case t::number_integer: out += std::to_string(v.get<std::int64_t>()); break;
    case t::number_unsigned: out += std::to_string(v.get<std::uint64_t>()); break;
    case t::number_float: append_python_float(out, v.get<double>()); break;
    case t::string: append_json_string(out, v.get_ref<const std::string&>()); break;
    case t::array: {
      out += '[';
      bool first = true;
      for (const auto& x : v) {
        if (!first)
          out += ", ";
        first = false;
        append_python_json(out, x);
      }
      out += ']';
      break;
    }
    case t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first)
          out += ", ";
        first = false;
        append_json_string(out, k);
        out += ": ";
        append_python_json(out, x);
      }
      out += '}';
      break;
    }
    case t::binary:
    case t::discarded: out += "null"; break;
  }
}

std::string python_json(const nlohmann::ordered_json& v) {
  std::string out;
  append_python_json(out, v);
  return out;
}

} // namespace deepinfer::recipe
