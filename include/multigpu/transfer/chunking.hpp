#pragma once
// Pure arithmetic for pipelined copies: how a transfer is cut into chunks so that copies
// overlap (double buffering) and so that every device is fed at once. Defined with the host
// stager in the memory layer (memory/detail/chunking.hpp); these are its public names.

#include <multigpu/memory/detail/chunking.hpp>

namespace multigpu::transfer {

using detail::chunk;
using detail::host_chunk_bytes;
using detail::interleave_chunks;
using detail::split_into_chunks;
using detail::staged_chunk_bytes;

}  // namespace multigpu::transfer
