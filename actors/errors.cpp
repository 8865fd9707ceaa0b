#include "actors/errors.hpp"

#include <caf/message.hpp>

namespace deepinfer::actors {

const char* to_string(errc x) {
  switch (x) {
    case errc::kv_block_missing: return "kv_block_missing";
    case errc::kv_store_io: return "kv_store_io";
    case errc::engine_out_of_kv: return "engine_out_of_kv";
    case errc::engine_bad_model: return "engine_bad_model";
    case errc::no_capacity: return "no_capacity";
    case errc::node_unreachable: return "node_unreachable";
    case errc::controller_unreachable: return "controller_unreachable";
    case errc::rank_failed: return "rank_failed";
    case errc::instance_down: return "instance_down";
    case errc::shutting_down: return "shutting_down";
  }
  return "unknown";
}

std::string render_errc(uint8_t code, caf::atom_value, const caf::message& context) {
  std::string out = "deepinfer: ";
  out += to_string(static_cast<errc>(code));
  if (context.match_elements<std::string>()) {
    out += " (";
    out += context.get_as<std::string>(0);
    out += ")";
  }
  return out;
}

} // namespace deepinfer::actors
