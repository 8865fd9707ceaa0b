#include "actors/http/connection_writer.hpp"

#include <boost/asio/post.hpp>

namespace deepinfer::actors::http {

connection_writer::connection_writer(std::shared_ptr<boost::asio::io_context> ioc, std::shared_ptr<connection> conn,
                                     uint64_t seq)
  : ioc_(std::move(ioc)), conn_(std::move(conn)), seq_(seq) {
  // nop
}

connection_writer::~connection_writer() {
  boost::asio::post(conn_->executor(), [c = conn_, s = seq_] { c->writer_dropped(s); });
}

void connection_writer::send(http_response response) {
  boost::asio::post(conn_->executor(),
                    [c = conn_, s = seq_, r = std::move(response)]() mutable { c->send(s, std::move(r)); });
}

void connection_writer::start_stream(unsigned status, std::string content_type, header_list headers) {
  boost::asio::post(conn_->executor(), [c = conn_, s = seq_, status, ct = std::move(content_type),
                                        h = std::move(headers)]() mutable {
    c->start_stream(s, status, std::move(ct), std::move(h));
  });
}

void connection_writer::write(std::string chunk) {
  boost::asio::post(conn_->executor(),
                    [c = conn_, s = seq_, data = std::move(chunk)]() mutable { c->write(s, std::move(data)); });
}

void connection_writer::finish() {
  boost::asio::post(conn_->executor(), [c = conn_, s = seq_] { c->finish(s); });
}

void connection_writer::on_disconnect(std::function<void()> callback) {
  boost::asio::post(conn_->executor(), [c = conn_, s = seq_, cb = std::move(callback)]() mutable {
    c->add_disconnect_callback(s, std::move(cb));
  });
}

} // namespace deepinfer::actors::http
