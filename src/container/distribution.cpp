#include <multigpu/container/distribution.hpp>

#include <multigpu/core/error.hpp>

#include <algorithm>

namespace multigpu {

distribution distribution::block(std::size_t n, std::size_t k) {
  MULTIGPU_EXPECTS(k > 0, detail::concat("distribution::block: ", n,
                                         " elements need at least one segment, got 0"));
  distribution d;
  MULTIGPU_EXPECTS_AS(k < d.offsets_.max_size(), std::length_error,
                      detail::concat("distribution::block: ", k, " segments need ", k,
                                     " + 1 offsets, more than a vector can hold"));
  d.offsets_.resize(k + 1);
  const std::size_t base = n / k, extra = n % k;
  // offset(s) = s * base + min(s, extra): no product larger than n, so no overflow.
  for (std::size_t s = 0; s <= k; ++s) d.offsets_[s] = s * base + std::min(s, extra);
  return d;
}

distribution distribution::from_sizes(std::span<const std::size_t> sizes) {
  MULTIGPU_EXPECTS(!sizes.empty(), "distribution::from_sizes: at least one segment is needed");
  distribution d;
  d.offsets_.resize(sizes.size() + 1);
  d.offsets_[0] = 0;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    MULTIGPU_EXPECTS(d.offsets_[s] + sizes[s] >= d.offsets_[s],
                     "distribution::from_sizes: the segment sizes overflow the size type");
    d.offsets_[s + 1] = d.offsets_[s] + sizes[s];
  }
  return d;
}

distribution::location distribution::locate(std::size_t i) const {
  MULTIGPU_EXPECTS_AS(i < size(), std::out_of_range,
                      detail::concat("index ", i, " is out of range for a vector of size ", size()));
  // The last segment starting at or before i; empty segments share their offset with the
  // next one, and upper_bound skips past all of them to the one that holds i.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), i);
  std::size_t s = static_cast<std::size_t>(it - offsets_.begin()) - 1;
  return {s, i - offsets_[s]};
}

void distribution::split_into(std::size_t first, std::size_t last, piece_list& out) const {
  MULTIGPU_EXPECTS(first <= last && last <= size(),
                   detail::concat("the range [", first, ", ", last,
                                  ") is not a valid range of a vector of size ", size()));
  out.clear();
  if (first == last) return;
  std::size_t s = locate(first).segment;
  for (; s < segment_count() && offsets_[s] < last; ++s) {
    std::size_t begin = std::max(first, offsets_[s]);
    std::size_t end = std::min(last, offsets_[s + 1]);
    if (begin < end) out.push_back({s, begin - offsets_[s], end - begin});
  }
}

std::vector<piece> distribution::split(std::size_t first, std::size_t last) const {
  piece_list pieces;
  split_into(first, last, pieces);
  return std::vector<piece>(pieces.begin(), pieces.end());
}

bool aligned(std::span<const piece> a, std::span<const piece> b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].slot != b[i].slot || a[i].count != b[i].count) return false;
  return true;
}

}  // namespace multigpu
