#pragma once
// The steps behind min_element and max_element (algorithm/min_max_element.hpp): each piece's
// best element and its index, and the order-keeping choice among them. Contains device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>

#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

namespace multigpu {
namespace detail {

template <class T>
struct indexed {
  std::size_t index;
  T value;
};

template <class T>
struct index_and_value {
  const T* data;
  std::size_t offset;  // global index of data[0]
  __host__ __device__ indexed<T> operator()(std::size_t i) const { return {offset + i, data[i]}; }
};

/// The better of two indexed values: `better(x, y)` says x beats y; ties go to the
/// smaller index.
template <class T, class Better>
struct first_best {
  Better better;
  __host__ __device__ indexed<T> operator()(const indexed<T>& a, const indexed<T>& b) const {
    if (better(a.value, b.value)) return a;
    if (better(b.value, a.value)) return b;
    return a.index <= b.index ? a : b;
  }
};

template <class T>
struct greater_than {
  template <class Compare>
  struct by {
    Compare compare;
    __host__ __device__ bool operator()(const T& a, const T& b) const { return compare(b, a); }
  };
};

/// The index in the whole vector of each piece's first element, as an operand of a
/// replayable() step.
template <class T>
struct global_offsets {
  const range_ref<T>& range;
  std::size_t data(std::size_t i) const {
    return range.vector->layout().segment_offset(range.pieces[i].slot) + range.pieces[i].local_offset;
  }
};

template <class I, class Better>
I best_element(const char* algorithm, I first, I last, Better better) {
  using T = typename I::value_type;
  using op_t = commutative_op<first_best<T, Better>>;
  using traits = partial_traits<indexed<T>, op_t>;
  using P = typename traits::partial;
  const nvtx_range range_mark(algorithm, static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = unpack_range(algorithm, first, last);
  if (count == 0) return last;
  range_ref<T> range(*v, begin, count);
  const auto lifted_op = traits::lift(op_t{first_best<T, Better>{better}});
  indexed<T> none{};
  const global_offsets<T> offsets{range};
  indexed<T> best = reduce_pieces<indexed<T>, P>(
                        range, lifted_op, none,
                        replayable(
                            [=](const piece_context& ctx, P* out, bool, const T* in, std::size_t offset) {
                              index_and_value<T> pair{in, offset};
                              reduce_one_piece<traits>(ctx, thrust::counting_iterator<std::size_t>(0), pair,
                                                       lifted_op, traits::empty(), out);
                            },
                            depends_on(), range, offsets))
                        .get();
  return first + static_cast<typename I::difference_type>(best.index - begin);
}

}  // namespace detail

}  // namespace multigpu
