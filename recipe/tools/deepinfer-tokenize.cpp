// deepinfer-tokenize: the DeepSeek tokenizer from the command line.
//
//   deepinfer-tokenize [--tokenizer PATH] [--template dsv41|dsv32] encode [--lines]
//   deepinfer-tokenize [--tokenizer PATH] [--template dsv41|dsv32] decode
//
// encode reads UTF-8 text on stdin and prints the ids separated by single spaces and a newline;
// special-token spellings in the text are encoded as ordinary text. With --lines, stdin is split
// on '\n' only and each line gives one output line (an empty line gives an empty line; a final
// '\n' ends the last line and does not start another). decode reads whitespace-separated ids and
// prints their text as is (no newline added), so `encode | decode` gives the input back.
// The tokenizer file is --tokenizer, else the template's file (default dsv41) in
// ${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}/tokenizer/ (see scripts/prepare_tokenizer.sh).
// Exit status: 0 ok; 2 bad usage or bad input (invalid UTF-8, a malformed or unknown id),
// with a message on stderr; 1 the tokenizer file could not be loaded.

#include "recipe/base/cli.hpp"
#include "recipe/tokenizer/tokenizer.hpp"
#include "recipe/tokenizer/utf8.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

using namespace deepinfer::recipe;

namespace {

int bad(const std::string& msg) {
  std::cerr << "deepinfer-tokenize: " << msg << "\n";
  return 2;
}

std::string read_stdin() {
  std::ostringstream buf;
  buf << std::cin.rdbuf();
  return buf.str();
}

void append_ids(std::string& out, const std::vector<token_id>& ids) {
  char num[16];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0)
      out += ' ';
    const auto r = std::to_chars(num, num + sizeof num, ids[i]);
    out.append(num, r.ptr);
  }
}

// The byte offset of the first invalid UTF-8 subpart, or npos.
std::size_t invalid_at(std::string_view s) {
  for (std::size_t pos = 0; pos < s.size();) {
    const auto st = utf8::next(s, pos);
    if (st.st != utf8::status::valid)
      return pos;
    pos += st.len;
  }
  return std::string_view::npos;
}

int encode(const tokenizer& tok, bool lines) {
  const std::string in = read_stdin();
  if (const auto at = invalid_at(in); at != std::string_view::npos)
    return bad("stdin is not valid UTF-8 (byte " + std::to_string(at) + ")");
  std::string out;
  if (!lines) {
    append_ids(out, tok.encode(in));
    out += '\n';
  } else {
    for (std::size_t pos = 0; pos < in.size();) {
      std::size_t nl = in.find('\n', pos);
      if (nl == std::string::npos)
        nl = in.size();
      append_ids(out, tok.encode(std::string_view{in}.substr(pos, nl - pos)));
      out += '\n';
      pos = nl + 1;
    }
  }
  std::cout << out << std::flush;
  return std::cout ? 0 : 1;
}

int decode(const tokenizer& tok) {
  const std::string in = read_stdin();
  std::vector<token_id> ids;
  const char* p = in.data();
  const char* end = p + in.size();
  while (true) {
    while (p < end && std::isspace(static_cast<unsigned char>(*p)))
      ++p;
    if (p == end)
      break;
    const char* word = p;
    while (p < end && !std::isspace(static_cast<unsigned char>(*p)))
      ++p;
    token_id id = 0;
    const auto r = std::from_chars(word, p, id);
    if (r.ec != std::errc{} || r.ptr != p)
      return bad("not a token id: '" + std::string(word, p) + "'");
    if (!tok.contains(id))
      return bad("unknown token id " + std::to_string(id) + " (vocabulary size " + std::to_string(tok.vocab_size()) + ")");
    ids.push_back(id);
  }
  std::cout << tok.decode(ids) << std::flush;
  return std::cout ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  std::string path, tmpl = "dsv41";
  bool lines = false;
  CLI::App app{"deepinfer-tokenize: the DeepSeek tokenizer from the command line.", "deepinfer-tokenize"};
  app.add_option("--tokenizer", path, "tokenizer.json (default: the template's file in the cache)");
  app.add_option("--template", tmpl, "dsv41 or dsv32 (picks the default tokenizer file)")
    ->check(CLI::IsMember({"dsv41", "dsv32"}))
    ->capture_default_str();
  auto* enc = app.add_subcommand("encode", "UTF-8 text on stdin -> ids separated by spaces");
  enc->add_flag("--lines", lines, "one output line per '\\n'-separated input line");
  auto* dec = app.add_subcommand("decode", "whitespace-separated ids on stdin -> their text");
  app.require_subcommand(1);
  app.fallthrough();  // --tokenizer and --template may also follow the command
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  (void)dec;
  if (path.empty()) {
    const char* cache = std::getenv("DEEPINFER_CACHE");
    const char* home = std::getenv("HOME");
    const std::filesystem::path dir = cache != nullptr && *cache != '\0' ? std::filesystem::path{cache}
                                                                          : std::filesystem::path{home != nullptr ? home : "."} / ".cache" / "deepinfer";
    const auto p = default_tokenizer_path(dir, tmpl);
    if (!p)
      return bad("unknown template '" + tmpl + "' (dsv41 or dsv32)");
    path = p->string();
  }
  tokenizer::config cfg;
  cfg.threads = 1;
  const auto tok = tokenizer::load(path, cfg);
  if (!tok) {
    std::cerr << "deepinfer-tokenize: " << tok.error << "\n";
    return 1;
  }
  return enc->parsed() ? encode(*tok.value, lines) : decode(*tok.value);
}
