// The ordering protocol of a collective call (runtime/detail/collective_sync.hpp).

#include <multigpu/runtime/detail/collective_sync.hpp>

#include <algorithm>

namespace multigpu::detail {

collective_sync::collective_sync(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams)
    : devices_(devices), streams_(streams) {
  slots_.reserve(devices.size());
  for (int device : devices) slots_.push_back(std::make_unique<slot_state>(device));
}

void collective_sync::join_readers(std::size_t root) {
  std::vector<std::size_t>& readers = at(root).readers;
  if (readers.empty()) return;
  const cudaStream_t root_stream = streams_[root];
  device_guard guard(devices_[root]);
  for (std::size_t reader : readers)
    if (streams_[reader] != root_stream) at(reader).done.order_before(root_stream);
  readers.clear();
}

void collective_sync::gather(std::size_t root, std::span<const piece> pieces) {
  join_readers(root);
  rerecord(root, pieces, false);
  const cudaStream_t root_stream = streams_[root];
  device_guard guard(devices_[root]);
  for (const piece& p : pieces)
    if (streams_[p.slot] != root_stream) at(p.slot).done.order_before(root_stream);
}

void collective_sync::scatter(std::size_t root, std::span<const piece> pieces) {
  if (pieces.size() == 1) return;
  const cudaStream_t root_stream = streams_[root];
  device_guard guard(devices_[root]);
  const event& fork = at(root).fork;
  fork.record(root_stream);
  for (const piece& p : pieces)
    if (streams_[p.slot] != root_stream) fork.order_before(streams_[p.slot]);
}

void collective_sync::rerecord(std::size_t root, std::span<const piece> pieces, bool with_fork) {
  const cudaStream_t root_stream = streams_[root];
  for (const piece& p : pieces) {
    const cudaStream_t s = streams_[p.slot];
    if (s == root_stream) continue;
    device_guard guard(devices_[p.slot]);
    at(p.slot).done.record(s);
  }
  if (!with_fork) return;
  device_guard guard(devices_[root]);
  at(root).fork.record(root_stream);
}

void collective_sync::rerecord_quietly(std::size_t root, std::span<const piece> pieces) noexcept {
  try {
    rerecord(root, pieces, true);
  } catch (...) {
  }
}

collective_call::collective_call(collective_sync& sync, std::span<const piece> pieces, const slot_streams& streams)
    : sync_(sync),
      root_state_(sync.at(pieces[0].slot)),
      streams_(streams),
      pieces_(pieces),
      root_(pieces[0].slot),
      guard_(sync.devices_[pieces[0].slot]) {
  root_state_.entered.assign(pieces_.size(), 0);
  // The steps of this call rewrite the arena: the fork follows its earlier readers.
  sync_.join_readers(root_);
  root_state_.fork.record(root_stream());
}

collective_call::~collective_call() {
  // Unwinding: every step that started may have enqueued writes to the arena. Each is marked
  // done, as leave() does, and the root joins the ones marked. The original error is what the
  // caller sees; a failure here means the device is lost.
  if (joined_) return;
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    if (!root_state_.entered[i]) continue;
    const std::size_t s = pieces_[i].slot;
    try {
      device_guard guard(sync_.devices_[s]);
      mark_done(s);
    } catch (...) {
    }
  }
  try {
    join();
  } catch (...) {
  }
}

void collective_call::enter(const piece_context& ctx) {
  root_state_.entered[ctx.index] = 1;
  if (ctx.stream != root_stream()) root_state_.fork.order_before(ctx.stream);
}

void collective_call::leave(const piece_context& ctx) { mark_done(ctx.slot); }

void collective_call::mark_done(std::size_t slot) {
  if (streams_[slot] != root_stream()) sync_.at(slot).done.record(streams_[slot]);
}

void collective_call::join() {
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    if (!root_state_.entered[i]) continue;
    const std::size_t s = pieces_[i].slot;
    if (streams_[s] != root_stream()) sync_.at(s).done.order_before(root_stream());
  }
  joined_ = true;
}

void collective_call::start_next_round() {
  guard_.set(root_device());
  root_state_.fork.record(root_stream());
  joined_ = false;
  std::fill(root_state_.entered.begin(), root_state_.entered.end(), 0);
}

void collective_call::end_with_readers() {
  if (streams_.capturing()) {
    join();
    return;
  }
  for (std::size_t i = 0; i < pieces_.size(); ++i)
    if (root_state_.entered[i]) root_state_.readers.push_back(pieces_[i].slot);
  joined_ = true;
}

}  // namespace multigpu::detail
