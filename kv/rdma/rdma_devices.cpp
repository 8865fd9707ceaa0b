#include "kv/rdma/rdma_devices.hpp"

#ifdef DEEPINFER_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace deepinfer::kv {

int rdma_device_count() {
#ifdef DEEPINFER_HAVE_IBVERBS
  int n = 0;
  if (auto** list = ibv_get_device_list(&n)) {
    ibv_free_device_list(list);
    return n;
  }
#endif
  return 0;
}

} // namespace deepinfer::kv
