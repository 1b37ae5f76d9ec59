// pool_resource models CCCL's cuda::mr async resource concept (device accessible, not host
// accessible), so cuda::mr::async_resource_ref can hold it. Checked by the compiler alone.
// LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE comes from the multigpu::multigpu target.
#include <multigpu/memory/resource.hpp>

#include <type_traits>

static_assert(cuda::mr::resource<multigpu::pool_resource>);
static_assert(cuda::mr::async_resource<multigpu::pool_resource>);
static_assert(cuda::mr::async_resource_with<multigpu::pool_resource, cuda::mr::device_accessible>);
static_assert(!cuda::mr::resource_with<multigpu::pool_resource, cuda::mr::host_accessible>);
static_assert(std::is_constructible_v<cuda::mr::async_resource_ref<cuda::mr::device_accessible>,
                                      multigpu::pool_resource&>);
static_assert(!std::is_constructible_v<cuda::mr::async_resource_ref<cuda::mr::host_accessible>,
                                       multigpu::pool_resource&>);
