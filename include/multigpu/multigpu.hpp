#pragma once
// The umbrella header: everything in namespace multigpu (users write `namespace mg = multigpu;`).
// Algorithms contain device code: include this from CUDA translation units. Host-only code
// can include container/distributed_vector.hpp, algorithm/copy.hpp and runtime/ headers.

#include <multigpu/version.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/diagnostics.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/event.hpp>
#include <multigpu/core/stream.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/memory/resource.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/algorithm/copy.hpp>
#include <multigpu/algorithm/count.hpp>
#include <multigpu/algorithm/equal.hpp>
#include <multigpu/algorithm/fill.hpp>
#include <multigpu/algorithm/for_each.hpp>
#include <multigpu/algorithm/gather.hpp>
#include <multigpu/algorithm/min_max_element.hpp>
#include <multigpu/algorithm/reduce.hpp>
#include <multigpu/algorithm/reduce_by_key.hpp>
#include <multigpu/algorithm/scan_by_key.hpp>
#include <multigpu/algorithm/scan.hpp>
#include <multigpu/algorithm/select.hpp>
#include <multigpu/algorithm/sort.hpp>
#include <multigpu/algorithm/stencil_transform.hpp>
#include <multigpu/algorithm/transform.hpp>
#include <multigpu/algorithm/transform_reduce.hpp>
#include <multigpu/extension/for_each_segment.hpp>
#include <multigpu/extension/halo.hpp>
#include <multigpu/extension/reduce_segments.hpp>
