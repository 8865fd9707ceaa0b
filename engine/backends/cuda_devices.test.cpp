#include "engine/backends/cuda_devices.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(cuda_devices)

BOOST_AUTO_TEST_CASE(query_reports_whether_the_backend_was_built) {
  auto result = deepinfer::engine::query_cuda_devices();
#ifdef DEEPINFER_HAVE_CUDA
  BOOST_TEST(result.built_with_cuda);
#else
  BOOST_TEST(!result.built_with_cuda);
  BOOST_TEST(!result.error.empty());
#endif
  // A device list and an error are never both empty-handed lies: zero devices is only a success
  // when the runtime said nothing went wrong.
  for (auto& d : result.devices) {
    BOOST_TEST(!d.name.empty());
    BOOST_TEST(d.total_memory_bytes > 0u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
