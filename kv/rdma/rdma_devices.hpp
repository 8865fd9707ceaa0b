#pragma once

namespace deepinfer::kv {

/// RDMA devices this process sees (0 without libibverbs at build time or without a device).
int rdma_device_count();

} // namespace deepinfer::kv
