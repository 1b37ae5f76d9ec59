#include <multigpu/container/halo_plan.hpp>

#include <multigpu/core/error.hpp>

namespace multigpu {

std::vector<halo_move> plan_halo_exchange(const distribution& layout, std::size_t width, bool periodic) {
  std::vector<halo_move> moves;
  if (width == 0) return moves;
  std::vector<std::size_t> filled;
  for (std::size_t s = 0; s < layout.segment_count(); ++s) {
    if (layout.segment_size(s) == 0) continue;
    MULTIGPU_EXPECTS(layout.segment_size(s) >= width,
                     detail::concat("exchange_halos: segment ", s, " holds ", layout.segment_size(s),
                                    " elements, fewer than the halo width ", width,
                                    "; use fewer slots or a narrower halo"));
    filled.push_back(s);
  }
  const std::size_t m = filled.size();
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t slot = filled[i];
    if (i > 0 || periodic) {
      const std::size_t left = filled[i > 0 ? i - 1 : m - 1];
      moves.push_back({left, layout.segment_size(left) - width, slot, true, width});
    }
    if (i + 1 < m || periodic) {
      const std::size_t right = filled[i + 1 < m ? i + 1 : 0];
      moves.push_back({right, 0, slot, false, width});
    }
  }
  return moves;
}

}  // namespace multigpu
