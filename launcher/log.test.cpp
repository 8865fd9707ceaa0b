#include "launcher/log.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(module_log)

BOOST_AUTO_TEST_CASE(module_logger_is_registered_under_the_folder_name) {
  auto& logger = deepinfer::launcher::log();
  BOOST_TEST(logger.name() == "launcher");
  BOOST_TEST(spdlog::get("launcher").get() == &logger);
}

BOOST_AUTO_TEST_SUITE_END()
