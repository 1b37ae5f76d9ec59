#include <multigpu/runtime/detail/peer_registry.hpp>

#include <multigpu/core/device_guard.hpp>

namespace multigpu::detail {

peer_registry& peer_registry::instance() {
  // Never destroyed: a group in static storage is destroyed at exit after any
  // function-local static made during main, and still releases its peer access here.
  static peer_registry* const registry = new peer_registry;
  return *registry;
}

bool peer_registry::can_access(int from, int to) {
  std::lock_guard lock(mutex_);
  auto key = std::pair{from, to};
  if (auto it = can_access_.find(key); it != can_access_.end()) return it->second != 0;
  int can = 0;
  MULTIGPU_CUDA_TRY(cudaDeviceCanAccessPeer(&can, from, to));
  can_access_[key] = can;
  return can != 0;
}

bool peer_registry::acquire(int from, int to) {
  std::lock_guard lock(mutex_);
  auto key = std::pair{from, to};
  int& refs = references_[key];
  if (refs > 0) {
    ++refs;
    return true;
  }
  device_guard guard(from);
  cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    (void)cudaGetLastError();  // enabled outside this library: use it, never disable it
  } else if (status == cudaErrorPeerAccessUnsupported || status == cudaErrorInvalidDevice ||
             status == cudaErrorTooManyPeers) {
    (void)cudaGetLastError();  // the topology says no: the pair goes through the host
    references_.erase(key);
    return false;
  } else {
    if (status != cudaSuccess) references_.erase(key);
    MULTIGPU_CUDA_TRY(status);
    enabled_by_us_.insert(key);
  }
  refs = 1;
  return true;
}

void peer_registry::release(int from, int to) noexcept {
  std::lock_guard lock(mutex_);
  auto key = std::pair{from, to};
  auto it = references_.find(key);
  if (it == references_.end() || --it->second > 0) return;
  references_.erase(it);
  verified_.erase(key);
  if (enabled_by_us_.erase(key) == 0) return;
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) return;
  if (cudaSetDevice(from) == cudaSuccess) {
    MULTIGPU_CUDA_REPORT(cudaDeviceDisablePeerAccess(to));
    MULTIGPU_CUDA_REPORT(cudaSetDevice(previous));
  }
}

void peer_registry::set_verified(int from, int to, bool verified) {
  std::lock_guard lock(mutex_);
  if (verified)
    verified_.insert({from, to});
  else
    verified_.erase({from, to});
}

peer_matrix peer_registry::snapshot(int device_count) {
  std::lock_guard lock(mutex_);
  peer_matrix m(static_cast<std::size_t>(device_count));
  for (const auto& [key, refs] : references_) {
    if (key.first >= device_count || key.second >= device_count) continue;
    peer_link& link = m.at(key.first, key.second);
    link.can_access = true;
    link.enabled = refs > 0;
    link.verified = verified_.count(key) != 0;
  }
  return m;
}

int peer_registry::holders(int from, int to) {
  std::lock_guard lock(mutex_);
  auto it = references_.find({from, to});
  return it == references_.end() ? 0 : it->second;
}

void peer_registry::set_forced_failure(int from, int to, bool fail) {
  std::lock_guard lock(mutex_);
  if (fail)
    forced_failures_.insert({from, to});
  else
    forced_failures_.erase({from, to});
}

bool peer_registry::forced_failure(int from, int to) {
  std::lock_guard lock(mutex_);
  return forced_failures_.count({from, to}) != 0;
}

}  // namespace multigpu::detail
