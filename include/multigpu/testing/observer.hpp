#pragma once
// Installing an execution observer (core/observer.hpp). Test-only: available where
// MULTIGPU_TESTING is defined, that is in programs linked with the internal target
// multigpu_testing (the library's own tests); never in the installed library.

#include <multigpu/core/observer.hpp>

#ifndef MULTIGPU_TESTING
#error "multigpu/testing/ is for the library's own tests: link the target multigpu_testing, which defines MULTIGPU_TESTING"
#endif

namespace multigpu::testing {

/// Makes `o` the observer of everything the library executes, from any thread, until
/// remove_observer(o). One at a time: std::logic_error when another is installed.
void install_observer(execution_observer& o);
/// Removes `o` if it is installed; once this returns, `o` is not called any more.
void remove_observer(execution_observer& o) noexcept;

/// Installs an observer for its lifetime.
class scoped_observer {
 public:
  explicit scoped_observer(execution_observer& o) : observer_(o) { install_observer(o); }
  ~scoped_observer() { remove_observer(observer_); }
  scoped_observer(const scoped_observer&) = delete;
  scoped_observer& operator=(const scoped_observer&) = delete;

 private:
  execution_observer& observer_;
};

}  // namespace multigpu::testing
