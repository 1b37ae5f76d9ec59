#include <multigpu/transfer/device_copy.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/runtime/detail/group_state.hpp>
#include <multigpu/transfer/chunking.hpp>

#include "../runtime/peer_registry.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace multigpu::transfer {
namespace {

using detail::group_state;

struct endpoint {
  group_state* group;
  std::size_t slot;
  int device() const { return group->device(slot); }
  cudaStream_t stream() const { return group->stream(slot); }
};

// `consumer` waits for the work enqueued on `producer` so far.
void order(const endpoint& producer, const endpoint& consumer) {
  if (producer.stream() == consumer.stream()) return;
  producer.group->events().order(producer.device(), producer.stream(), consumer.stream());
}

void copy_on_stream(const byte_move& m, const endpoint& src, const endpoint& dst, route kind,
                    cudaStream_t stream) {
  if (kind == route::peer)
    MULTIGPU_CUDA_TRY(cudaMemcpyPeerAsync(m.destination, dst.device(), m.source, src.device(),
                                          m.bytes, stream));
  else
    MULTIGPU_CUDA_TRY(
        cudaMemcpyAsync(m.destination, m.source, m.bytes, cudaMemcpyDeviceToDevice, stream));
}

// Device -> pinned host -> device, in chunks through the caller's two staging blocks so
// that the download of chunk c+1 overlaps the upload of chunk c. Entirely stream-ordered: each
// block's reuse waits on the event of its last upload, never on the host.
void staged_copy(std::span<const byte_move> moves, const endpoint& src, const endpoint& dst,
                 staging_pool::lease (&buffers)[2]) {
  // The destination's memory may still be in use by earlier work on its own stream only,
  // which the uploads follow; the source's data is produced on its own stream, which the
  // downloads follow. So no initial event is needed.
  std::size_t turn = 0;
  for (const byte_move& m : moves) {
    for (const chunk& c : split_into_chunks(m.bytes, staged_chunk_bytes)) {
      staging_pool::lease& buffer = buffers[turn++ % 2];
      {
        device_guard guard(src.device());
        buffer.order_before(src.stream());
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(buffer.data(), static_cast<const std::byte*>(m.source) + c.offset,
                                          c.bytes, cudaMemcpyDeviceToHost, src.stream()));
        order(src, dst);
      }
      device_guard guard(dst.device());
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(static_cast<std::byte*>(m.destination) + c.offset, buffer.data(),
                                        c.bytes, cudaMemcpyHostToDevice, dst.stream()));
      buffer.fence(dst.device(), dst.stream());
    }
  }
  // The source's stream must not overwrite or free the source before the downloads ran:
  // they ran on that same stream, so stream order already guarantees it.
}

}  // namespace

void copy_between(group_state& source_group, group_state& destination_group,
                  std::span<const byte_move> moves) {
  if (moves.empty()) return;
  const bool same_group = &source_group == &destination_group;
  const peer_policy policy = (source_group.options().peers == peer_policy::host_staged ||
                              destination_group.options().peers == peer_policy::host_staged)
                                 ? peer_policy::host_staged
                                 : peer_policy::automatic;
  peer_matrix cross_links;
  if (!same_group) {
    int count = 0;
    MULTIGPU_CUDA_TRY(cudaGetDeviceCount(&count));
    cross_links = detail::peer_registry::instance().snapshot(count);
  }
  const peer_matrix& links = same_group ? source_group.links() : cross_links;

  // Group the moves by (source slot, destination slot) so each pair is ordered once.
  std::map<std::pair<std::size_t, std::size_t>, std::vector<byte_move>> by_pair;
  for (const byte_move& m : moves)
    if (m.bytes > 0) by_pair[{m.src_slot, m.dst_slot}].push_back(m);

  // Everything that can fail before data moves (routes, staging blocks, pool access) is
  // done first, so that a copy that throws for want of memory leaves its target as it was.
  std::vector<copy_route> routes;
  routes.reserve(by_pair.size());
  bool any_staged = false;
  for (const auto& [pair, pair_moves] : by_pair) {
    endpoint src{&source_group, pair.first};
    endpoint dst{&destination_group, pair.second};
    copy_route r{route::same_device, true};
    if (src.stream() != dst.stream()) r = choose_route(policy, src.device(), dst.device(), links);
    if (r.kind == route::peer && !same_group) {
      // The route comes from the process-wide record of enabled links, but a group grants
      // its pools only to its own devices' peers: let the issuing device reach the other
      // side's pool before copying over the link (a no-op once granted).
      const endpoint& other = r.issued_by_destination ? src : dst;
      other.group->pool_of_device(other.device()).grant_access((r.issued_by_destination ? dst : src).device());
    }
    any_staged = any_staged || r.kind == route::host_staged;
    routes.push_back(r);
  }
  // Two staging blocks serve every staged pair in turn: each reuse waits on the fences of
  // the block's previous uploads (staging_pool::lease::order_before).
  staging_pool::lease blocks[2];
  if (any_staged) {
    blocks[0] = source_group.staging().acquire(staged_chunk_bytes);
    blocks[1] = source_group.staging().acquire(staged_chunk_bytes);
  }

  std::size_t index = 0;
  for (const auto& [pair, pair_moves] : by_pair) {
    const copy_route r = routes[index++];
    endpoint src{&source_group, pair.first};
    endpoint dst{&destination_group, pair.second};
    if (src.stream() == dst.stream()) {
      // Within one segment's stream: stream order is all the ordering needed.
      device_guard guard(dst.device());
      for (const byte_move& m : pair_moves) copy_on_stream(m, src, dst, route::same_device, dst.stream());
      continue;
    }
    if (r.kind == route::host_staged) {
      staged_copy(pair_moves, src, dst, blocks);
      continue;
    }
    // Pull on the destination's stream or push on the source's: the issuing stream first
    // waits for the other side's earlier work, and the other side then waits for the copy.
    const endpoint& issuer = r.issued_by_destination ? dst : src;
    const endpoint& other = r.issued_by_destination ? src : dst;
    device_guard guard(issuer.device());
    order(other, issuer);
    for (const byte_move& m : pair_moves) copy_on_stream(m, src, dst, r.kind, issuer.stream());
    order(issuer, other);
  }
}

}  // namespace multigpu::transfer
