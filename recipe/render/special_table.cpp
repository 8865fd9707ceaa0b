#include "recipe/render/special_table.hpp"

#include "recipe/tokenizer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>

namespace deepinfer::recipe {

expected<special_table, std::string> special_table::build(template_version version, const lookup& find) {
  special_table t;
  t.version_ = version;
  std::vector<std::string_view> required = {spelling::bos, spelling::eos, spelling::user, spelling::assistant,
                                            spelling::think_open, spelling::think_close};
  std::vector<std::string_view> optional;
  if (version == template_version::dsv41) {
    required.push_back(spelling::system);
    required.push_back(spelling::dsml);
    optional.push_back(spelling::image);
  }
  for (auto s : required) {
    auto id = find(s);
    if (!id)
      return std::string("tokenizer has no special token ") + std::string(s) + " needed by template " +
             std::string(to_string(version));
    t.entries_.emplace_back(std::string(s), *id);
  }
  for (auto s : optional)
    if (auto id = find(s))
      t.entries_.emplace_back(std::string(s), *id);
  // The published V4.1 tokenizer tables stop at 128846; the image placeholder lives in the
  // multimodal range the spec (§7) gives as 129264. Use that until a tokenizer file carries it.
  if (version == template_version::dsv41 && !t.id(spelling::image))
    t.entries_.emplace_back(std::string(spelling::image), token_id{129264});
  return t;
}

expected<special_table, std::string> special_table::from_tokenizer(template_version version, const tokenizer& tok) {
  return build(version, [&](std::string_view s) { return tok.special_id(s); });
}

expected<special_table, std::string> special_table::from_tokenizer_json(template_version version,
                                                                        const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return "cannot open tokenizer file " + path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Parse only the `added_tokens` array: the whole file is ~8 MB of vocabulary and merges.
  const auto key = text.find("\"added_tokens\"");
  const auto open = key == std::string::npos ? key : text.find('[', key);
  if (open == std::string::npos)
    return "no added_tokens in " + path;
  std::size_t depth = 0, close = open;
  bool in_string = false;
  for (; close < text.size(); ++close) {
    const char c = text[close];
    if (in_string) {
      if (c == '\\')
        ++close;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      break;
    }
  }
  auto arr = nlohmann::json::parse(text.substr(open, close + 1 - open), nullptr, false);
  if (arr.is_discarded() || !arr.is_array())
    return "malformed added_tokens in " + path;
  std::map<std::string, token_id, std::less<>> ids;
  for (const auto& a : arr)
    if (a.contains("content") && a.contains("id"))
      ids[a["content"].get<std::string>()] = a["id"].get<token_id>();
  return build(version, [&](std::string_view s) -> std::optional<token_id> {
    auto it = ids.find(s);
    if (it == ids.end())
      return std::nullopt;
    return it->second;
  });
}

std::optional<token_id> special_table::id(std::string_view spelling) const {
  for (const auto& [s, i] : entries_)
    if (s == spelling)
      return i;
  return std::nullopt;
}

} // namespace deepinfer::recipe
