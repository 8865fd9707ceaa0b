#include "actors/errors.hpp"

#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace deepinfer::actors {

const char* to_string(errc x) {
  switch (x) {
    case errc::kv_block_missing: return "kv_block_missing";
    case errc::kv_store_io: return "kv_store_io";
    case errc::kv_transport_unknown: return "kv_transport_unknown";
    case errc::kv_parcel_gone: return "kv_parcel_gone";
    case errc::kv_package_corrupt: return "kv_package_corrupt";
    case errc::kv_rdma_failed: return "kv_rdma_failed";
    case errc::engine_out_of_kv: return "engine_out_of_kv";
    case errc::engine_bad_model: return "engine_bad_model";
    case errc::engine_missing: return "engine_missing";
    case errc::engine_invalid_request: return "engine_invalid_request";
    case errc::engine_import_failed: return "engine_import_failed";
    case errc::engine_step_failed: return "engine_step_failed";
    case errc::engine_export_failed: return "engine_export_failed";
    case errc::no_capacity: return "no_capacity";
    case errc::no_decode_rank: return "no_decode_rank";
    case errc::no_rank_large_enough: return "no_rank_large_enough";
    case errc::node_unreachable: return "node_unreachable";
    case errc::controller_unreachable: return "controller_unreachable";
    case errc::rank_failed: return "rank_failed";
    case errc::ep_group_failed: return "ep_group_failed";
    case errc::pool_refused: return "pool_refused";
    case errc::instance_down: return "instance_down";
    case errc::shutting_down: return "shutting_down";
    case errc::request_cancelled: return "request_cancelled";
    case errc::so_refused: return "so_refused";
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

bool is_retryable(const caf::error& e) {
  if (!e)
    return false;
  if (e.category() == caf::atom("deepinfer"))
    return is_retryable(static_cast<errc>(e.code()));
  return e.category() == caf::atom("system");
}

std::string error_text(const caf::error& e) {
  if (e.context().match_elements<std::string>())
    return e.context().get_as<std::string>(0);
  return {};
}

} // namespace deepinfer::actors
