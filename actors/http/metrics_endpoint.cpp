#include "actors/http/metrics_endpoint.hpp"

namespace deepinfer::actors::http {

router::handler metrics_endpoint(std::shared_ptr<const metrics_registry> registry) {
  return [registry = std::move(registry)](http_request, std::shared_ptr<response_writer> writer) {
    http_response res;
    res.content_type = std::string{metrics_registry::content_type};
    res.body = registry->render();
    writer->send(std::move(res));
  };
}

} // namespace deepinfer::actors::http
