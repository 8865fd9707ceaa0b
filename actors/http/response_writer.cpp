#include "actors/http/response_writer.hpp"

#include "actors/http/openai_error.hpp"

namespace deepinfer::actors::http {

void response_writer::send_error(unsigned status, std::string_view message, std::string_view code,
                                 std::string_view type) {
  http_response r;
  r.status = status;
  r.body = openai_error(message, type.empty() ? openai_error_type(status) : type,
                        code.empty() ? std::nullopt : std::optional<std::string_view>{code});
  send(std::move(r));
}

void response_writer::send_json(unsigned status, std::string body) {
  http_response r;
  r.status = status;
  r.body = std::move(body);
  send(std::move(r));
}

} // namespace deepinfer::actors::http
