// deepinfer-kvtool: inspect and maintain a KV block store root.
//
//   deepinfer-kvtool --root DIR [--fingerprint DESC] stats [--low BYTES --high BYTES]
//   deepinfer-kvtool --root DIR [--fingerprint DESC] gc --low BYTES --high BYTES
//                    [--ttl-agent-h H] [--ttl-chatbot-h H]
//   deepinfer-kvtool --root DIR [--fingerprint DESC] verify [--remove]
//   deepinfer-kvtool --root DIR [--fingerprint DESC] check --ids FILE
//   deepinfer-kvtool --root DIR [--fingerprint DESC] put --ids FILE [--bytes N] [--class agent|chatbot]
//
// A token-id file holds a JSON array of ids or ids separated by white space or commas.
#include "kv/block_store.hpp"
#include "kv/check_index.hpp"
#include "kv/gc.hpp"
#include "kv/hash_chain.hpp"
#include "kv/hit_policy.hpp"
#include "kv/log.hpp"
#include "kv/lru_ttl_policy.hpp"
#include "recipe/base/cli.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

using namespace deepinfer::kv;

namespace {

struct options {
  std::string root;
  std::string fingerprint = "ced_moe/tiny";
  std::string command;
  std::map<std::string, std::string> flags;
};

/// The command line as `options`, or the exit status to return (after --help, or bad usage).
std::variant<options, int> parse(int argc, char** argv) {
  options opt;
  CLI::App app{"deepinfer-kvtool: inspect and maintain a KV block store root. A token-id file holds a JSON "
               "array of ids or ids separated by white space or commas.",
               "deepinfer-kvtool"};
  app.add_option("--root", opt.root, "the store's root directory")->required();
  app.add_option("--fingerprint", opt.fingerprint, "the model description the keys are salted with")
    ->capture_default_str();
  // Every command's options land in `opt.flags` by name, when given.
  std::map<std::string, std::string> raw;
  std::vector<std::pair<CLI::Option*, std::string>> given;
  auto value = [&](CLI::App* cmd, const std::string& name, const std::string& help) {
    auto* o = cmd->add_option("--" + name, raw[name], help);
    given.emplace_back(o, name);
    return o;
  };
  auto* stats = app.add_subcommand("stats", "counts, bytes, age histogram, watermark state");
  value(stats, "low", "low watermark (bytes)");
  value(stats, "high", "high watermark (bytes)");
  auto* gc = app.add_subcommand("gc", "evict down to the low watermark once above the high one");
  value(gc, "low", "low watermark (bytes)")->required();
  value(gc, "high", "high watermark (bytes)")->required();
  value(gc, "ttl-agent-h", "TTL of agent blocks (hours)");
  value(gc, "ttl-chatbot-h", "TTL of chatbot blocks (hours)");
  auto* verify = app.add_subcommand("verify", "check every block's checksum");
  bool remove = false;
  verify->add_flag("--remove", remove, "remove the blocks that fail");
  auto* check = app.add_subcommand("check", "the hit for a token-id file");
  value(check, "ids", "the token-id file")->required();
  auto* put = app.add_subcommand("put", "store the file's blocks");
  value(put, "ids", "the token-id file")->required();
  value(put, "bytes", "bytes per block");
  value(put, "class", "traffic class")->check(CLI::IsMember({"agent", "chatbot"}));
  app.require_subcommand(1);
  app.fallthrough();  // --root and --fingerprint may also follow the command
  if (auto rc = deepinfer::parse_command_line(app, argc, argv))
    return *rc;
  opt.command = app.get_subcommands().front()->get_name();
  for (auto& [o, name] : given)
    if (o->count() > 0)
      opt.flags[name] = raw[name];
  if (remove)
    opt.flags["remove"] = "1";
  return opt;
}

std::vector<token_id> read_ids(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[')
    return nlohmann::json::parse(text).get<std::vector<token_id>>();
  std::vector<token_id> ids;
  std::string cleaned = text;
  for (auto& c : cleaned)
    if (c == ',')
      c = ' ';
  std::istringstream words(cleaned);
  long long v;
  while (words >> v)
    ids.push_back(static_cast<token_id>(v));
  if (!words.eof())
    throw std::runtime_error("not a token-id file: " + path);
  return ids;
}

uint64_t flag_u64(const options& opt, const std::string& name, uint64_t fallback) {
  auto it = opt.flags.find(name);
  return it == opt.flags.end() ? fallback : std::stoull(it->second);
}

const char* state_name(watermark_state s) {
  switch (s) {
    case watermark_state::below_low:
      return "below_low";
    case watermark_state::between:
      return "between";
    default:
      return "above_high";
  }
}

int cmd_stats(block_store& store, const options& opt) {
  const int64_t now = store.cfg().time->now_ms();
  const std::vector<std::pair<const char*, int64_t>> buckets = {
    {"<1h", 3600'000}, {"<1d", 86'400'000}, {"<3d", 3 * 86'400'000LL}, {"<7d", 7 * 86'400'000LL}};
  nlohmann::json out;
  std::map<std::string, std::pair<uint64_t, uint64_t>> per_class;
  std::map<std::string, uint64_t> ages;
  store.catalog().for_each_lru([&](const block_meta& m, bool) {
    auto& c = per_class[std::string{to_string(m.cls)}];
    ++c.first;
    c.second += m.bytes;
    std::string bucket = ">=7d";
    for (const auto& [name, limit] : buckets)
      if (now - m.last_use_ms < limit) {
        bucket = name;
        break;
      }
    ++ages[bucket];
    return true;
  });
  out["root"] = opt.root;
  out["blocks"] = store.catalog().size();
  out["bytes"] = store.catalog().bytes();
  for (const auto& [cls, c] : per_class)
    out["classes"][cls] = {{"blocks", c.first}, {"bytes", c.second}};
  out["age_since_last_use"] = ages;
  out["scan"] = {{"debris_removed", store.scan().debris_removed}, {"bad_removed", store.scan().bad_removed}};
  if (opt.flags.count("high")) {
    const lru_ttl_policy policy;
    gc collector{gc::config{flag_u64(opt, "low", 0), flag_u64(opt, "high", 0), store.cfg().time},
                 store.catalog(), policy};
    out["watermark"] = state_name(collector.state());
  }
  out["io_backend"] = store.backend() == io_backend::uring ? "uring" : "thread_pool";
  std::cout << out.dump(2) << "\n";
  return 0;
}

int cmd_gc(block_store& store, const options& opt) {
  if (!opt.flags.count("high") || !opt.flags.count("low")) {
    std::cerr << "gc needs --low and --high\n";
    return 2;
  }
  lru_ttl_policy::config pcfg;
  pcfg.ttl.agent_ms = static_cast<int64_t>(flag_u64(opt, "ttl-agent-h", 72)) * 3600'000;
  pcfg.ttl.chatbot_ms = static_cast<int64_t>(flag_u64(opt, "ttl-chatbot-h", 168)) * 3600'000;
  const lru_ttl_policy policy{pcfg};
  gc collector{gc::config{flag_u64(opt, "low", 0), flag_u64(opt, "high", 0), store.cfg().time},
               store.catalog(), policy, store.remover()};
  const auto r = collector.run_once();
  nlohmann::json out = {{"expired", r.expired},         {"evicted", r.evicted},
                        {"skipped_held", r.skipped_held}, {"bytes_freed", r.bytes_freed},
                        {"bytes_after", r.bytes_after},   {"watermark", state_name(collector.state())}};
  std::cout << out.dump(2) << "\n";
  return 0;
}

int cmd_verify(block_store& store, const options& opt) {
  const auto r = store.verify(opt.flags.count("remove") > 0);
  nlohmann::json out = {{"ok", r.ok}, {"corrupt", r.corrupt}, {"removed", r.removed}};
  std::cout << out.dump(2) << "\n";
  return r.corrupt == 0 ? 0 : 1;
}

int cmd_check(block_store& store, const options& opt, const hash_chain& chain) {
  const auto ids = read_ids(opt.flags.at("ids"));
  const auto keys = chain.keys(ids);
  check_index index{store.probe()};
  store.catalog().for_each_lru([&](const block_meta& m, bool) {
    index.insert(m.key);
    return true;
  });
  const auto hit = index.longest_prefix(keys);
  const hit_policy policy;
  const auto exact = policy(ids.size(), hit.blocks, true);
  const auto replay = policy(ids.size(), hit.blocks, false);
  nlohmann::json out = {{"prompt_tokens", ids.size()},
                        {"full_blocks", keys.size()},
                        {"stored_prefix_blocks", hit.blocks},
                        {"l1", policy.reusable_length(ids.size(), hit.blocks)},
                        {"hit_if_swa_snapshot", exact.hit_length},
                        {"hit_if_swa_miss", replay.hit_length},
                        {"blocks_to_fetch", exact.blocks}};
  std::cout << out.dump(2) << "\n";
  return 0;
}

int cmd_put(block_store& store, const options& opt, const hash_chain& chain) {
  const auto ids = read_ids(opt.flags.at("ids"));
  const auto keys = chain.keys(ids);
  const auto cls = parse_traffic_class(opt.flags.count("class") ? opt.flags.at("class") : "chatbot");
  if (!cls) {
    std::cerr << "unknown --class\n";
    return 2;
  }
  std::vector<std::byte> payload(flag_u64(opt, "bytes", 112 * 1024));
  std::size_t written = 0;
  for (const auto& key : keys) {
    // Synthetic bytes derived from the key: the tool has no engine to export real KV.
    for (std::size_t i = 0; i < payload.size(); ++i)
      payload[i] = static_cast<std::byte>((key.lo >> (8 * (i % 8))) + i);
    if (store.write(key, payload, *cls) == write_status::io_error)
      return 1;
    ++written;
  }
  std::cout << nlohmann::json{{"blocks", written}}.dump() << "\n";
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  auto parsed = parse(argc, argv);
  if (auto* rc = std::get_if<int>(&parsed))
    return *rc;
  auto* opt = &std::get<options>(parsed);
  // stdout carries the JSON answer; the store's log goes to stderr.
  auto& logger = deepinfer::kv::log();
  logger.sinks().clear();
  logger.sinks().push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger.set_level(spdlog::level::warn);
  try {
    block_store::config cfg;
    cfg.root = opt->root;
    cfg.fingerprint = model_fingerprint::of(opt->fingerprint);
    auto store = block_store::open(cfg);
    if (!store) {
      std::cerr << "cannot open store under " << opt->root << "\n";
      return 1;
    }
    const hash_chain chain{cfg.fingerprint};
    if (opt->command == "stats")
      return cmd_stats(*store, *opt);
    if (opt->command == "gc")
      return cmd_gc(*store, *opt);
    if (opt->command == "verify")
      return cmd_verify(*store, *opt);
    return opt->command == "check" ? cmd_check(*store, *opt, chain) : cmd_put(*store, *opt, chain);
  } catch (const std::exception& e) {
    std::cerr << "deepinfer-kvtool: " << e.what() << "\n";
    return 1;
  }
}
