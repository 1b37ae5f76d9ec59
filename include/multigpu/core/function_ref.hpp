#pragma once
// A non-owning reference to a callable (as C++26's std::function_ref): two pointers, no
// allocation, no copy of the callable. For per-call steps handed to the slots' workers,
// where std::function would allocate for any lambda capturing more than two references.
// The callable must outlive the function_ref (pass temporaries only as arguments); plain
// functions are taken through a pointer or a lambda, not as function lvalues.

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace multigpu::detail {

template <class Signature>
class function_ref;

template <class R, class... Args>
class function_ref<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, function_ref> && std::is_object_v<std::remove_reference_t<F>> &&
             std::is_invocable_r_v<R, F&, Args...>)
  function_ref(F&& f) noexcept  // NOLINT(google-explicit-constructor): a reference to any callable object
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          auto& callable = *static_cast<std::remove_reference_t<F>*>(object);
          if constexpr (std::is_void_v<R>)
            std::invoke(callable, std::forward<Args>(args)...);  // a result, if any, is dropped
          else
            return std::invoke(callable, std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace multigpu::detail
