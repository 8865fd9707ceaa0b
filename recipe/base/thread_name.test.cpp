// name_this_thread: the name a thread gets, cut to Linux's 15 bytes.
#include "recipe/base/thread_name.hpp"

#include <boost/test/unit_test.hpp>

#include <pthread.h>

#include <string>
#include <thread>

namespace {

std::string named_as(const std::string& asked) {
  std::string seen;
  std::thread t([&] {
    deepinfer::name_this_thread(asked);
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    seen = name;
  });
  t.join();
  return seen;
}

} // namespace

BOOST_AUTO_TEST_SUITE(base_thread_name)

BOOST_AUTO_TEST_CASE(a_thread_is_named_and_a_long_name_keeps_its_first_15_bytes) {
  BOOST_TEST(named_as("kv.writer") == "kv.writer");
  BOOST_TEST(named_as("prefill.12/r63") == "prefill.12/r63");
  BOOST_TEST(named_as("vision.encode.extra.words") == "vision.encode.e");
}

BOOST_AUTO_TEST_SUITE_END()
