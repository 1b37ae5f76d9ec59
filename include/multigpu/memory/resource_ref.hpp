#pragma once
// The kind of memory resource a vector's segments may come from: anything that models CCCL's
// cuda::mr::async_resource with the cuda::mr::device_accessible property, held by a
// non-owning cuda::mr::async_resource_ref (group_options::resources).
//
// cuda::mr is experimental in CCCL 3.0 and hidden behind LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE.
// The multigpu::multigpu CMake target defines it for the library and for everything that
// links it (as RMM's target does), so the macro is the same in every translation unit.

#ifndef LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#error "multigpu needs LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE (CCCL 3.0's cuda::mr is experimental). Link the multigpu::multigpu CMake target, which defines it for its users, or add -DLIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE to every translation unit that includes a multigpu or CCCL header."
#endif

#include <cuda/memory_resource>
#include <cuda/stream_ref>

namespace multigpu {

/// A non-owning reference to a stream-ordered resource of device-accessible memory.
using device_resource_ref = cuda::mr::async_resource_ref<cuda::mr::device_accessible>;

}  // namespace multigpu
