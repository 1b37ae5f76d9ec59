#pragma once
// The bulk exchange of a team call: one all_to_all_v of a rank's local part by a
// redistribution plan, from device memory or through host memory (exchange_path). Used by
// redistribute (and what is built on it) and by the sorts. Host code: include it from any
// translation unit that includes team_vector.hpp.

#include <multigpu/comm/communicator.hpp>
#include <multigpu/team/team_plan.hpp>
#include <multigpu/team/team_vector.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace multigpu::detail {

/// One bulk exchange: the elements of `from` (a rank's local part) go by `plan` to `to`, which
/// may be `from` itself (the sort's case: what arrives replaces the part). In three phases, so
/// that the caller agrees on the rank-local ones in its own steps (team.hpp):
///   1. prepare() (rank-local): on the device path the parts' streams are waited for, the
///      communicator's staging is made, and an in-place exchange gets a vector of the part's
///      layout to receive into; on the host path the part is copied to the host (unless the
///      caller has a host copy already: `host_from`) and a host vector receives;
///   2. move() (collective): the all_to_all_v; on the device path what arrived then takes the
///      part's place (in place);
///   3. put_in_place() (rank-local): on the host path, what arrived is uploaded into `to`.
/// Both paths make the same calls, so ranks may take different ones (exchange_on_device).
template <class T>
class bulk_exchange {
 public:
  bulk_exchange(const team& t, const redistribution_plan& plan, const distributed_vector<T>& from,
                distributed_vector<T>& to, bool on_device, const std::vector<T>* host_from = nullptr)
      : team_(t), plan_(plan), from_(from), to_(to), on_device_(on_device), host_from_(host_from) {}

  void prepare() {
    if (on_device_) {
      if (in_place()) replacement_.emplace(to_.group(), to_.layout(), to_.halo());
      // What the communicator sends is complete, and an earlier local step's errors surface
      // here; a `to` on another group is free to receive into. One wait per group.
      from_.group().synchronize();
      if (to_.group() != from_.group()) to_.group().synchronize();
      team_.comm().reserve_staging(from_.size() * sizeof(T), to_.size() * sizeof(T));
      return;
    }
    if (host_from_ == nullptr) sent_ = to_vector(from_);
    arrived_.resize(to_.size());
  }

  void move() {
    const auto counts = [](const std::vector<std::size_t>& c) { return std::span<const std::size_t>(c); };
    if (on_device_) {
      T* target = in_place() ? one_slot_data(*replacement_) : one_slot_data(to_);
      team_.comm().all_to_all_v(one_slot_data(from_), counts(plan_.send_counts), counts(plan_.send_displs), target,
                                counts(plan_.recv_counts), counts(plan_.recv_displs), to_.group().stream(0));
      if (in_place()) {
        to_.swap(*replacement_);
        replacement_.reset();  // the part's old storage, freed in stream order after the exchange
      }
      return;
    }
    const T* source = host_from_ != nullptr ? host_from_->data() : sent_.data();
    team_.comm().all_to_all_v(host_memory, source, counts(plan_.send_counts), counts(plan_.send_displs),
                              arrived_.data(), counts(plan_.recv_counts), counts(plan_.recv_displs));
    sent_ = {};
  }

  void put_in_place() {
    if (on_device_) return;
    detail::vector_access::upload(to_, 0, arrived_.data(), arrived_.size());
    arrived_ = {};
  }

 private:
  bool in_place() const noexcept { return &from_ == &to_; }

  const team& team_;
  const redistribution_plan& plan_;
  const distributed_vector<T>& from_;
  distributed_vector<T>& to_;
  bool on_device_;
  const std::vector<T>* host_from_;
  std::optional<distributed_vector<T>> replacement_;
  std::vector<T> sent_, arrived_;
};

}  // namespace multigpu::detail
