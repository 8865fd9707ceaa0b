#pragma once

#include "actors/http/response_writer.hpp"

namespace deepinfer::actors::http {

/// A writer with no client behind it: what a background Responses turn writes once its create
/// call is answered (non-streaming) or its client stopped listening (streaming). The turn's end
/// goes to the response store instead.
class discarding_writer final : public response_writer {
public:
  void send(http_response) override {}
  void start_stream(unsigned, std::string, header_list) override {}
  void write(std::string) override {}
  void finish() override {}
  void on_disconnect(std::function<void()>) override {}
};

} // namespace deepinfer::actors::http
