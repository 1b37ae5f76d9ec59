// The observer hooks of testing builds (core/observer.hpp); compiled only into multigpu_testing.
#include <multigpu/testing/observer.hpp>

#include <mutex>
#include <shared_mutex>
#include <stdexcept>

namespace multigpu {
namespace {

// Hooks hold the lock shared while they call the observer, so removal waits for them.
std::shared_mutex& lock() {
  static auto* m = new std::shared_mutex;  // never destroyed: hooks may run during static teardown
  return *m;
}
execution_observer* installed = nullptr;

}  // namespace

namespace testing {

void install_observer(execution_observer& o) {
  std::unique_lock guard(lock());
  if (installed != nullptr)
    throw std::logic_error("multigpu::testing::install_observer: another observer (a schedule_recording or a "
                           "fault_injection) is already installed");
  installed = &o;
}

void remove_observer(execution_observer& o) noexcept {
  std::unique_lock guard(lock());
  if (installed == &o) installed = nullptr;
}

}  // namespace testing

namespace detail {

void observe_work(cudaStream_t stream, const char* label) {
  std::shared_lock guard(lock());
  if (installed) installed->work(stream, label);
}
void observe_record(cudaEvent_t event, cudaStream_t stream) {
  std::shared_lock guard(lock());
  if (installed) installed->record(event, stream);
}
void observe_wait(cudaStream_t stream, cudaEvent_t event) {
  std::shared_lock guard(lock());
  if (installed) installed->wait(stream, event);
}
bool fault_due(fault_site site) {
  std::shared_lock guard(lock());
  return installed != nullptr && installed->fail(site);
}

}  // namespace detail
}  // namespace multigpu
