#pragma once
// stencil_transform: exchange halos, then one grid per segment where f sees each element and
// its neighbours up to `radius` away, read from the segment's own memory and its halo.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/algorithm/detail/collective/halo_exchange.hpp>

#include <cub/device/device_for.cuh>

#include <cstddef>

namespace multigpu {

/// What a stencil operator sees: w[k] is the element k places from the centre
/// (-radius <= k <= radius). At the ends of a non-periodic vector the places outside
/// [0, size()) hold the outer halos' contents; use index() and size() to treat them.
template <class T>
class stencil_window {
 public:
  __host__ __device__ stencil_window(const T* center, std::size_t index, std::size_t size)
      : center_(center), index_(index), size_(size) {}
  __host__ __device__ const T& operator[](std::ptrdiff_t k) const { return center_[k]; }
  __host__ __device__ std::size_t index() const { return index_; }
  __host__ __device__ std::size_t size() const { return size_; }

 private:
  const T* center_;
  std::size_t index_;
  std::size_t size_;
};

namespace detail {
template <class T, class U, class F>
struct stencil_functor {
  const T* in;
  U* out;
  std::size_t offset;
  std::size_t size;
  F f;
  __device__ void operator()(std::size_t i) const { out[i] = f(stencil_window<T>(in + i, offset + i, size)); }
};
}  // namespace detail

/// out[i] = f(window around in[i]). `in` must carry a halo of at least `radius`; `out` must
/// be another vector with the same group and layout (in place would read overwritten
/// neighbours).
template <class T, class U, class F>
void stencil_transform(distributed_vector<T>& in, distributed_vector<U>& out, std::size_t radius, F f) {
  const nvtx_range range("stencil_transform", in.size());
  MULTIGPU_EXPECTS(in.halo().width >= radius,
                   detail::concat("stencil_transform: the input's halo is ", in.halo().width,
                                  " elements wide but the stencil radius is ", radius));
  MULTIGPU_EXPECTS(static_cast<const void*>(&in) != static_cast<const void*>(&out),
                   "stencil_transform: the output must be another vector than the input");
  MULTIGPU_EXPECTS(in.group() == out.group() && in.layout() == out.layout(),
                   detail::concat("stencil_transform: the output (", out.size(),
                                  " elements) must have the input's group and layout (", in.size(),
                                  " elements)"));
  detail::halo_exchange(in);
  for (std::size_t s = 0; s < in.segment_count(); ++s) {
    segment_view<T> seg = in.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    detail::stencil_functor<T, U, F> step{seg.data(), out.segment(s).data(), seg.offset(), in.size(), f};
    detail::check_cub(detail::with_count(seg.size(), [&](auto n) { return cub::DeviceFor::Bulk(n, step, seg.stream()); }),
                      "cub::DeviceFor::Bulk", std::source_location::current());
  }
}

}  // namespace multigpu
