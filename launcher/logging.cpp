#include "launcher/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "actors/log.hpp"
#include "balancers/log.hpp"
#include "engine/log.hpp"
#include "kv/log.hpp"
#include "launcher/log.hpp"
#include "recipe/log.hpp"

namespace deepinfer::launcher {

bool setup_logging(const std::string& level, const std::string& node_name) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    return false;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  sink->set_pattern("%Y-%m-%d %H:%M:%S.%e " + node_name + " %n %^%l%$ %v");
  auto root = std::make_shared<spdlog::logger>("deepinfer", sink);
  root->set_level(lvl);
  spdlog::set_default_logger(root);
  // Module loggers are created on first use by cloning the default logger; make sure each exists
  // now and uses this sink and level even if something logged before.
  for (auto* logger : {&actors::log(), &balancers::log(), &engine::log(), &kv::log(),
                       &launcher::log(), &recipe::log()}) {
    logger->sinks() = {sink};
    logger->set_level(lvl);
  }
  return true;
}

} // namespace deepinfer::launcher
