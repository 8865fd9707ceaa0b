// The image URLs of a request fetched before it is prepared (request_prepare.hpp): each once, all
// at once, off the I/O thread, under the fetcher's size and time limits, with their metrics.
#include "actors/entrypoint/request_prepare.hpp"

#include "actors/entrypoint/serving_context.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace deepinfer::actors {

std::vector<std::string> image_urls(const recipe::conversation& conv) {
  std::vector<std::string> out;
  for (const auto& m : conv.messages)
    for (const auto& part : m.content)
      if (part.type == recipe::content_part::kind::image && part.value.rfind("data:", 0) != 0 &&
          std::find(out.begin(), out.end(), part.value) == out.end())
        out.push_back(part.value);
  return out;
}

namespace {

const char* fetch_result_label(const http::fetch_result& r) {
  if (r)
    return "ok";
  using k = http::fetch_error::kind;
  switch (r.error().what) {
    case k::bad_url: return "bad_url";
    case k::refused_address: return "refused_address";
    case k::unreachable: return "unreachable";
    case k::tls: return "tls";
    case k::timeout: return "timeout";
    case k::too_large: return "too_large";
    case k::not_image: return "not_image";
    case k::http_status: return "http_status";
    case k::too_many_redirects: return "too_many_redirects";
  }
  return "unknown";
}

} // namespace

void fetch_images(const entrypoint::context& ctx, const std::vector<std::string>& urls,
                  std::function<void(fetched_images)> done) {
  struct pending {
    std::mutex mtx;
    fetched_images got;
    std::size_t left = 0;
    std::function<void(fetched_images)> done;
  };
  auto p = std::make_shared<pending>();
  p->left = urls.size();
  p->done = std::move(done);
  if (urls.empty())
    return p->done({});
  // The metrics live in the node's registry, which outlives the fetcher and its callbacks.
  auto* fetches = ctx.image_fetches;
  auto* seconds = ctx.image_fetch_seconds;
  auto* bytes = ctx.image_fetch_bytes;
  for (const auto& url : urls)
    ctx.fetcher->fetch(url, [p, url, fetches, seconds, bytes, t0 = std::chrono::steady_clock::now()](http::fetch_result r) {
      if (fetches)
        fetches->with({fetch_result_label(r)}).inc();
      if (seconds)
        seconds->observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (bytes && r)
        bytes->inc(static_cast<double>(r->size()));
      std::unique_lock lock{p->mtx};
      p->got.insert_or_assign(url, std::move(r));
      if (--p->left == 0) {
        lock.unlock();
        p->done(std::move(p->got));
      }
    });
}

} // namespace deepinfer::actors
