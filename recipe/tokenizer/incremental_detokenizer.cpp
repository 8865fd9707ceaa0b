#include "recipe/tokenizer/incremental_detokenizer.hpp"

#include "recipe/tokenizer/utf8.hpp"

namespace deepinfer::recipe {

incremental_detokenizer::incremental_detokenizer(std::shared_ptr<const tokenizer> tok) : tok_(std::move(tok)) {}

std::string incremental_detokenizer::push(token_id id) {
  held_ += tok_->token_bytes(id);
  const std::size_t n = utf8::complete_prefix(held_);
  std::string out;
  utf8::append_lossy(out, std::string_view{held_}.substr(0, n));
  held_.erase(0, n);
  return out;
}

std::string incremental_detokenizer::flush() {
  std::string out;
  utf8::append_lossy(out, held_);
  held_.clear();
  return out;
}

} // namespace deepinfer::recipe
