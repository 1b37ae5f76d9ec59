#pragma once
// NVTX ranges in a domain of their own, "multigpu", from the header-only nvtx3 that ships
// with the CUDA toolkit. Nsight Systems shows them on each host thread's timeline next to
// the CUDA calls they issue (nsys profile --trace=cuda,nvtx). Without a tool attached a
// range costs one check of a function pointer. Define MULTIGPU_DISABLE_NVTX (or nvtx3's own
// NVTX_DISABLE) to compile them out.

#include <cstdint>

#ifndef MULTIGPU_DISABLE_NVTX
#include <nvtx3/nvtx3.hpp>
#endif

namespace multigpu {

/// The NVTX domain of every range the library emits.
struct nvtx_domain {
  static constexpr const char* name{"multigpu"};
};

/// A range named `name` in the multigpu domain, from construction to destruction, on the
/// calling thread. `name` must be a string that outlives the range (a literal). The
/// optional payload is shown with the range: elements for algorithms, bytes for transfers.
class nvtx_range {
 public:
  explicit nvtx_range(const char* name) noexcept
#ifndef MULTIGPU_DISABLE_NVTX
      : range_(nvtx3::event_attributes{nvtx3::message{name}, color()})
#endif
  {
    (void)name;
  }
  nvtx_range(const char* name, std::uint64_t payload) noexcept
#ifndef MULTIGPU_DISABLE_NVTX
      : range_(nvtx3::event_attributes{nvtx3::message{name}, color(), nvtx3::payload{payload}})
#endif
  {
    (void)name;
    (void)payload;
  }
  nvtx_range(const nvtx_range&) = delete;
  nvtx_range& operator=(const nvtx_range&) = delete;

 private:
#ifndef MULTIGPU_DISABLE_NVTX
  static nvtx3::color color() noexcept { return nvtx3::color{nvtx3::rgb{118, 185, 0}}; }
  nvtx3::scoped_range_in<nvtx_domain> range_;
#endif
};

}  // namespace multigpu
