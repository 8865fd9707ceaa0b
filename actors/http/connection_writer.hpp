#pragma once

#include "actors/http/connection.hpp"

namespace deepinfer::actors::http {

/// Internal: the `response_writer` handed to handlers; it posts every call onto its
/// connection's strand, tagged with the request number so stale calls are ignored there.
class connection_writer final : public response_writer {
public:
  /// `ioc` keeps the executor valid for as long as this writer lives, even past the server.
  connection_writer(std::shared_ptr<boost::asio::io_context> ioc, std::shared_ptr<connection> conn, uint64_t seq);
  /// Tells the connection, which answers 500 if nothing was sent.
  ~connection_writer() override;

  void send(http_response response) override;
  void start_stream(unsigned status, std::string content_type, header_list headers) override;
  void write(std::string chunk) override;
  void finish() override;
  void on_disconnect(std::function<void()> callback) override;

private:
  // Declared first so it is destroyed last, after conn_.
  std::shared_ptr<boost::asio::io_context> ioc_;
  std::shared_ptr<connection> conn_;
  uint64_t seq_;
};

} // namespace deepinfer::actors::http
