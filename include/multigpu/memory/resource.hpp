#pragma once
// The library's memory resources, each modelling CCCL's cuda::mr::async_resource with the
// cuda::mr::device_accessible property (CCCL 3.0), so that code written against
// cuda::mr::async_resource_ref<cuda::mr::device_accessible> (CCCL containers, RMM-style
// adaptors, your own) can allocate from them:
// - pool_resource (device_pool.hpp): a group's device pool,
//
//     #include <multigpu/memory/resource.hpp>
//     multigpu::pool_resource pool(group.pool(slot));
//     cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{pool};
//     void* p = ref.allocate_async(bytes, 256, group.stream(slot));
//
//   The resource refers to the pool; it must not outlive the group. A pool_resource (or a
//   resource wrapping one) may also be given to group_options::resources.
// - managed_resource (device_buffer.hpp): cudaMallocManaged memory, also host accessible.
//
// cuda::mr is experimental in CCCL 3.0: the multigpu::multigpu CMake target defines the
// opt-in macro LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE for its users (see
// resource_ref.hpp).

#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/resource_ref.hpp>
