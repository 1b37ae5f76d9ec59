#include <multigpu/core/error.hpp>
#include <multigpu/transfer/copy_plan.hpp>

#include <algorithm>

namespace multigpu::transfer {

std::size_t total_count(std::span<const piece> pieces) noexcept {
  std::size_t total = 0;
  for (const piece& p : pieces) total += p.count;
  return total;
}

namespace {
/// The elements the pieces cover: std::length_error saying `too_many` when the sum does not
/// fit the size type (a wrapped total could match the other side's and plan a partial copy).
std::size_t checked_total(std::span<const piece> pieces, const char* too_many) {
  std::size_t total = 0;
  for (const piece& p : pieces) total = detail::checked_add(total, p.count, too_many);
  return total;
}
}  // namespace

std::vector<move> plan_moves(std::span<const piece> source, std::span<const piece> destination) {
  const std::size_t src_total =
      checked_total(source, "plan_moves: the source pieces cover more elements than the size type holds");
  const std::size_t dst_total =
      checked_total(destination, "plan_moves: the destination pieces cover more elements than the size type holds");
  MULTIGPU_EXPECTS(src_total == dst_total,
                   detail::concat("plan_moves: the source covers ", src_total,
                                  " elements but the destination covers ", dst_total));
  std::vector<move> moves;
  std::size_t si = 0, di = 0;        // current pieces
  std::size_t s_used = 0, d_used = 0;  // elements consumed within them
  while (si < source.size() && di < destination.size()) {
    const piece& s = source[si];
    const piece& d = destination[di];
    std::size_t n = std::min(s.count - s_used, d.count - d_used);
    if (n > 0) moves.push_back({s.slot, s.local_offset + s_used, d.slot, d.local_offset + d_used, n});
    s_used += n;
    d_used += n;
    if (s_used == s.count) {
      ++si;
      s_used = 0;
    }
    if (d_used == d.count) {
      ++di;
      d_used = 0;
    }
  }
  return moves;
}

}  // namespace multigpu::transfer
