// deepinfer-so-check: structured-output acceptance on MaskBench JSONL.
//
//   zstd -dc maskbench.jsonl.zst | deepinfer-so-check [--tokenizer PATH] [--limit N] [--timeout-ms MS] [--warm]
//                                                     [--json-whitespace N] [--sample N] [--seed N]
//                                                     [--sample-out PATH]
//
// Each input line is {"file", "source"?, "schema", "tests": [{"valid", "data"}]}. The schema is
// compiled; each test's data, serialized compactly (`,` `:` and no spaces, keys in their order),
// is tokenized with the real tokenizer and walked token by token through the masks (every token
// must be in the mask computed before it), ending with end-of-sequence (the state must accept).
// One JSON line per schema on stdout:
//   {"file","source","compiled","error","compile_us","mask_us_mean","mask_us_p99","mask_n",
//    "mask_hist","bytes","bytes_walked","mismatch","tests":[{"valid","accepted"}]}
// bytes: the automata right after the compile; bytes_walked: after the tests were walked (the
// parts built on first use, key unions and other-key lexemes, included).
// mask_hist counts mask times in buckets (1 us wide below 100 us, 10 us below 1 ms, 100 us
// below 10 ms, then one) so that bench/so_summary.py can merge percentiles. mismatch counts
// tokens where the mask and `advance` disagreed (must be 0). Before the first line the common
// lexers (strings, numbers, punctuation) are warmed once, as a serving process does at start.
// With --warm the tests of each schema are walked a second time and that pass's mask times are
// added as warm_mask_us_mean / warm_mask_hist (every lexer state's class already computed).
// With --sample N, N outputs of each compiled schema are drawn at random among the tokens the
// masks allow (within a few dozen tokens past the shortest completion) and each is checked
// against the schema by the JSON Schema validator: sampled, sampled_invalid (must be 0: an
// output the constraint let through that the schema rejects), sampled_undecided (the validator
// cannot decide a keyword), and the first invalid output's text. --seed N draws another set (the
// draws of schema n are seeded n + N). --sample-out PATH writes every drawn output as a JSON line
// {"file","i","text","fault"} (fault: null or the draw's fault) so that an independent validator
// (Python `jsonschema`, ajv) can judge them too: ours and the compiler share the reading of each
// keyword, so a misreading both make is invisible to `sampled_invalid`.

#include "recipe/base/cli.hpp"
#include "recipe/structured/compiler.hpp"
#include "recipe/structured/json_validate.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <string>

using namespace deepinfer::recipe;
using clk = std::chrono::steady_clock;

namespace {

std::size_t bucket(double us) {
  if (us < 100)
    return static_cast<std::size_t>(us);
  if (us < 1000)
    return 100 + static_cast<std::size_t>((us - 100) / 10);
  if (us < 10000)
    return 190 + static_cast<std::size_t>((us - 1000) / 100);
  return 280;
}

void walk(const so::matcher& m, const tokenizer& tok, const nlohmann::ordered_json& data, bool& accepted,
          std::vector<double>& times, std::size_t& mismatch) {
  const auto text = data.dump();
  const auto ids = tok.encode(text);
  auto st = m.start();
  accepted = true;
  for (auto id : ids) {
    const auto t0 = clk::now();
    const auto mask = m.allowed_tokens(st);
    times.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
    const bool allowed = so::mask_test(mask, id);
    auto next = st;
    const bool ok = m.advance(next, id);
    if (ok != allowed)
      ++mismatch;
    if (!allowed || !ok) {
      accepted = false;
      return;
    }
    st = std::move(next);
  }
  const auto t0 = clk::now();
  const auto mask = m.allowed_tokens(st);
  times.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  const bool eos = so::mask_test(mask, m.vocab().eos());
  if (eos != m.is_accepting(st))
    ++mismatch;
  accepted = eos;
}

} // namespace

int main(int argc, char** argv) {
  std::string tok_path;
  std::size_t limit = SIZE_MAX;
  long timeout_ms = 2000;
  bool warm = false;
  int sample = 0;
  std::uint32_t seed = 0;
  std::string sample_out;
  long json_whitespace = -1;
  CLI::App app{"deepinfer-so-check: structured-output acceptance on MaskBench JSONL (stdin); one JSON line per "
               "schema on stdout.",
               "deepinfer-so-check"};
  app.add_option("--tokenizer", tok_path, "tokenizer.json (default: the cache's tokenizer_v41.json)");
  app.add_option("--limit", limit, "check at most this many schemas");
  app.add_option("--timeout-ms", timeout_ms, "compile time limit per schema")->capture_default_str();
  app.add_option("--json-whitespace", json_whitespace,
                 "most whitespace bytes in a row between JSON tokens, as the server's [so] json_whitespace (-1: any)")
      ->capture_default_str();
  app.add_option("--sample", sample, "draw this many random outputs per schema and validate each");
  app.add_option("--seed", seed, "added to each schema's draw seed (another set of random outputs)")->capture_default_str();
  app.add_option("--sample-out", sample_out, "write every drawn output as a JSON line {file, i, text, fault} to this file");
  app.add_flag("--warm", warm, "walk each schema's tests a second time and report that pass's mask times too");
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  if (tok_path.empty()) {
    const char* c = std::getenv("DEEPINFER_CACHE");
    const char* home = std::getenv("HOME");
    std::filesystem::path dir = c != nullptr && *c != '\0' ? std::filesystem::path{c}
                                                           : std::filesystem::path{home ? home : "/root"} / ".cache" / "deepinfer";
    tok_path = (dir / "tokenizer" / "tokenizer_v41.json").string();
  }
  auto loaded = tokenizer::load(tok_path);
  if (!loaded) {
    std::cerr << "deepinfer-so-check: " << tok_path << ": " << loaded.error << "\n";
    return 1;
  }
  const auto& tok = *loaded.value;
  so::compiler::config cfg;
  cfg.timeout = std::chrono::milliseconds{timeout_ms};
  so::compiler comp{so::vocabulary::of(tok), cfg};
  const auto ws = json_whitespace < 0 ? std::nullopt : std::optional<std::uint32_t>{static_cast<std::uint32_t>(json_whitespace)};
  // Warm the shared lexer classes once (strings, numbers, literals in the usual places).
  for (const char* w : {R"({"a":"x","b":1,"c":1.5,"d":true,"e":null,"f":["y"],"g":{"h":"z"}})"}) {
    if (auto m = comp.compile({so::constraint_kind::json_object, "", ws}); m) {
      bool acc;
      std::vector<double> t;
      std::size_t mm = 0;
      walk(**m, tok, nlohmann::ordered_json::parse(w), acc, t, mm);
    }
  }
  std::optional<std::ofstream> drawn_out;
  if (!sample_out.empty()) {
    drawn_out.emplace(sample_out);
    if (!*drawn_out) {
      std::cerr << "deepinfer-so-check: cannot write " << sample_out << "\n";
      return 1;
    }
  }
  std::string line;
  std::size_t n = 0;
  while (n < limit && std::getline(std::cin, line)) {
    if (line.empty())
      continue;
    ++n;
    nlohmann::ordered_json in;
    nlohmann::ordered_json out;
    try {
      in = nlohmann::ordered_json::parse(line);
    } catch (const std::exception& e) {
      std::cerr << "deepinfer-so-check: line " << n << ": " << e.what() << "\n";
      return 2;
    }
    out["file"] = in.value("file", "");
    out["source"] = in.value("source", "");
    const auto t0 = clk::now();
    auto m = comp.compile({so::constraint_kind::json_schema, in["schema"].dump(), ws});
    out["compile_us"] = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
    out["compiled"] = m.has_value();
    out["error"] = m ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(m.error());
    std::vector<double> times;
    std::size_t mismatch = 0;
    nlohmann::ordered_json tests = nlohmann::ordered_json::array();
    if (m) {
      out["bytes"] = so::compiler::bytes_of(**m);
      for (auto& t : in["tests"]) {
        bool acc = false;
        walk(**m, tok, t["data"], acc, times, mismatch);
        tests.push_back({{"valid", t.value("valid", false)}, {"accepted", acc}});
      }
      out["bytes_walked"] = so::compiler::bytes_of(**m);
    }
    double mean = 0, p99 = 0;
    std::vector<std::uint32_t> hist(281, 0);
    if (!times.empty()) {
      for (auto x : times)
        mean += x, ++hist[bucket(x)];
      mean /= static_cast<double>(times.size());
      auto sorted = times;
      std::sort(sorted.begin(), sorted.end());
      p99 = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)];
    }
    out["mask_us_mean"] = mean;
    out["mask_us_p99"] = p99;
    out["mask_n"] = times.size();
    nlohmann::ordered_json h = nlohmann::ordered_json::object();
    for (std::size_t i = 0; i < hist.size(); ++i)
      if (hist[i] != 0)
        h[std::to_string(i)] = hist[i];
    out["mask_hist"] = h;
    if (warm && m) {
      std::vector<double> wt;
      for (auto& t : in["tests"]) {
        bool acc = false;
        walk(**m, tok, t["data"], acc, wt, mismatch);
      }
      double wm = 0;
      nlohmann::ordered_json wh = nlohmann::ordered_json::object();
      std::vector<std::uint32_t> whist(281, 0);
      for (auto x : wt)
        wm += x, ++whist[bucket(x)];
      for (std::size_t i = 0; i < whist.size(); ++i)
        if (whist[i] != 0)
          wh[std::to_string(i)] = whist[i];
      out["warm_mask_us_mean"] = wt.empty() ? 0.0 : wm / static_cast<double>(wt.size());
      out["warm_mask_n"] = wt.size();
      out["warm_mask_hist"] = wh;
    }
    if (sample > 0 && m) {
      std::mt19937 rng{static_cast<std::uint32_t>(n) + seed};
      const auto root = nlohmann::ordered_json::parse(in["schema"].dump());
      auto unbounded = so::budget::unbounded();
      so::json_validator check{root, unbounded};
      const auto least = (*m)->shortest_completion_length((*m)->start());
      std::size_t invalid = 0, undecided = 0, drawn = 0;
      std::map<std::string, std::size_t> why;
      for (int i = 0; i < sample; ++i) {
        const auto out_i = so::draw_output(**m, rng, least + 1 + static_cast<std::size_t>(i % 48));
        const auto text = tok.decode(out_i.tokens);
        const char* fault = out_i.fault;
        ++drawn;
        if (drawn_out)
          *drawn_out << nlohmann::json{{"file", in.value("file", "")}, {"i", i}, {"text", text},
                                       {"fault", fault ? nlohmann::json(fault) : nlohmann::json()}}
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                     << "\n";
        const char* bad = fault;
        static const std::regex long_number{"[0-9]{16}"};
        if (!bad && std::regex_search(text, long_number)) {
          ++undecided;  // parsed into a double, the number is not the one written: cannot be judged
          continue;
        }
        if (!bad) {
          nlohmann::ordered_json v;
          try {
            v = nlohmann::ordered_json::parse(text);
          } catch (const std::exception&) {
            // JSON that nlohmann cannot hold (an exponent past a double's range) is not a fault.
            static const std::regex huge_exponent{"[0-9][eE][+-]?[0-9]{3,}"};
            bad = std::regex_search(text, huge_exponent) ? nullptr : "not JSON";
            if (!bad) {
              ++undecided;
              continue;
            }
          }
          if (!bad)
            try {
              if (!check.valid(v, root))
                bad = "invalid";
            } catch (const std::exception&) {
              ++undecided;  // a keyword the validator cannot decide
            }
        }
        if (bad) {
          if (invalid++ == 0)
            out["sampled_invalid_text"] = std::string(bad) + ": " + text;
          ++why[bad];
        }
      }
      out["sampled_faults"] = why;
      out["sampled"] = drawn;
      out["sampled_invalid"] = invalid;
      out["sampled_undecided"] = undecided;
    }
    out["mismatch"] = mismatch;
    out["tests"] = tests;
    std::cout << out.dump() << "\n" << std::flush;
  }
  return 0;
}
