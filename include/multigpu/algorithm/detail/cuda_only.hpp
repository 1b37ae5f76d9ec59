#pragma once
// Included first by every algorithm header that holds device code: a host compiler stops
// here with one line that names the fix, instead of hundreds of errors from inside CUB.
// The host-safe headers are listed in docs/api.md#namespaces-and-headers.

#if !defined(__CUDACC__)
#error "multigpu: algorithms are CUDA code: call them from a .cu file; the container and group headers may be included from .cpp"
// A missing include is fatal: the compilation ends here, before CUB's errors.
#include <multigpu_algorithms_need_a_cu_file>
#endif
