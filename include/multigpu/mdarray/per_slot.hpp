#pragma once
// per_slot: a functor made afresh for each slot. The N-D algorithms launch one grid per slot
// with the same functor; a functor that must differ by slot (one that reads a replicated
// scalar through its slot's copy, say) is given as per_slot{make}, and the algorithm launches
// slot s with make(s).

#include <cstddef>
#include <type_traits>

namespace multigpu {

template <class Make>
struct per_slot {
  Make make;
};
template <class Make>
per_slot(Make) -> per_slot<Make>;

namespace detail {
template <class F>
inline constexpr bool is_per_slot_v = false;
template <class Make>
inline constexpr bool is_per_slot_v<per_slot<Make>> = true;

/// The functor slot `slot` launches with.
template <class F>
auto bind_slot(const F& f, std::size_t slot) {
  if constexpr (is_per_slot_v<std::remove_cvref_t<F>>)
    return f.make(slot);
  else
    return f;
}
}  // namespace detail

}  // namespace multigpu
