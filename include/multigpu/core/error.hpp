#pragma once
// Error translation: every CUDA call is checked, and failures carry the call, the CUDA
// error name and string, the current device and file:line (after RMM's RMM_CUDA_TRY).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace multigpu {

/// A CUDA runtime call failed.
class cuda_error : public std::runtime_error {
 public:
  cuda_error(cudaError_t code, const char* call, int device, const char* file, int line);
  cudaError_t code() const noexcept { return code_; }
  int device() const noexcept { return device_; }

 private:
  cudaError_t code_;
  int device_;
};

/// A device allocation could not be satisfied. Derives from std::bad_alloc so that code
/// written for host containers catches it too.
class out_of_memory : public std::bad_alloc {
 public:
  out_of_memory(int device, std::size_t requested_bytes, std::size_t free_bytes, std::string what);
  const char* what() const noexcept override { return message_.c_str(); }
  int device() const noexcept { return device_; }
  std::size_t requested_bytes() const noexcept { return requested_; }
  std::size_t free_bytes() const noexcept { return free_; }

 private:
  int device_;
  std::size_t requested_;
  std::size_t free_;
  std::string message_;
};

namespace detail {

/// Streams every argument into one string: messages name the values involved.
template <class... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// Free memory on `device` (cudaMemGetInfo with it current), for out-of-memory messages; 0 when
/// it cannot be asked (no such device, a lost context).
std::size_t free_device_bytes(int device) noexcept;

/// Destructors must not throw: a failure there is written to stderr instead. A runtime
/// already unloading at process exit is not reported (there is nothing left to release).
void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept;

template <class Exception>
[[noreturn]] void throw_precondition(const std::string& message, const char* file, int line) {
  throw Exception(concat("multigpu: ", message, " (", file, ":", line, ")"));
}

/// a + b, or std::length_error saying `what` when the sum does not fit std::size_t: plans
/// compare totals that must not wrap.
inline std::size_t checked_add(std::size_t a, std::size_t b, const char* what) {
  if (b > static_cast<std::size_t>(-1) - a) throw_precondition<std::length_error>(what, __FILE__, __LINE__);
  return a + b;
}

}  // namespace detail
}  // namespace multigpu

/// Evaluates a CUDA runtime call and throws multigpu::cuda_error (or multigpu::out_of_memory
/// for cudaErrorMemoryAllocation) if it failed.
#define MULTIGPU_CUDA_TRY(call)                                                      \
  do {                                                                               \
    ::cudaError_t multigpu_status_ = (call);                                         \
    if (multigpu_status_ != ::cudaSuccess)                                           \
      ::multigpu::detail::throw_cuda_error(multigpu_status_, #call, __FILE__, __LINE__); \
  } while (false)

/// For destructors and other noexcept paths: checks the call and reports a failure on stderr.
#define MULTIGPU_CUDA_REPORT(call)                                                    \
  do {                                                                                \
    ::cudaError_t multigpu_status_ = (call);                                          \
    if (multigpu_status_ != ::cudaSuccess)                                            \
      ::multigpu::detail::report_cuda_error(multigpu_status_, #call, __FILE__, __LINE__); \
  } while (false)

/// Precondition check: throws std::invalid_argument with the message if cond is false.
#define MULTIGPU_EXPECTS(cond, message) \
  MULTIGPU_EXPECTS_AS(cond, ::std::invalid_argument, message)

/// Precondition check with a chosen exception type (std::out_of_range for indices).
#define MULTIGPU_EXPECTS_AS(cond, exception, message)                                   \
  do {                                                                                  \
    if (!(cond)) ::multigpu::detail::throw_precondition<exception>((message), __FILE__, __LINE__); \
  } while (false)
