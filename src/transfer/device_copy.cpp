#include <multigpu/transfer/device_copy.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/transfer/chunking.hpp>

#include <multigpu/runtime/detail/peer_registry.hpp>

#include <algorithm>
#include <map>
#include <vector>

namespace multigpu::transfer {
namespace {

using detail::group_resources;

struct endpoint {
  group_resources* group;
  std::size_t slot;
  int device() const { return group->device(slot); }
  cudaStream_t stream() const { return group->stream(slot); }
};

void copy_on_stream(const byte_move& m, const endpoint& src, const endpoint& dst, route kind,
                    cudaStream_t stream) {
  if (kind == route::peer)
    MULTIGPU_CUDA_TRY(cudaMemcpyPeerAsync(m.destination, dst.device(), m.source, src.device(),
                                          m.bytes, stream));
  else
    MULTIGPU_CUDA_TRY(
        cudaMemcpyAsync(m.destination, m.source, m.bytes, cudaMemcpyDeviceToDevice, stream));
  detail::observe_work(stream, "copy");
}

// The moves of one (source slot, destination slot) pair.
struct pair_moves {
  endpoint src;
  endpoint dst;
  copy_route route;
  std::vector<byte_move> moves;
};

// Events of the copy, kept until every wait on them is enqueued.
struct copy_events {
  event_pool& pool;
  std::map<cudaStream_t, event_pool::handle> before;  // each stream's work before the copy
  const event_pool::handle& before_on(const endpoint& e) {
    auto it = before.find(e.stream());
    if (it == before.end()) it = before.emplace(e.stream(), pool.record(e.device(), e.stream())).first;
    return it->second;
  }
};

// Device -> pinned host -> device, in chunks through two staging blocks per pair so that the
// download of chunk c+1 overlaps the upload of chunk c. Chunk by chunk across all pairs:
// every pair's download of chunk c is enqueued before any pair's upload of chunk c, so a
// stream that is the destination of one pair and the source of another does not make the
// second pair's copy wait for the first's (a shift over k slots stays one step deep, not k).
// Entirely stream-ordered: each block's reuse waits on the event of its last upload.
struct staged_pair {
  pair_moves* pair;
  std::vector<std::pair<std::size_t, chunk>> chunks;  // (move, chunk)
  staging_pool::lease buffers[2];
  event_pool::handle downloaded;
};

// Takes the staging blocks of every staged pair: done before any data moves, so that a copy
// that fails for want of pinned memory leaves its target as it was.
std::vector<staged_pair> prepare_staged(std::span<pair_moves*> pairs, staging_pool& staging) {
  std::vector<staged_pair> work;
  work.reserve(pairs.size());
  for (pair_moves* p : pairs) {
    staged_pair s{p, {}, {}, {}};
    std::size_t largest = 0;
    for (std::size_t m = 0; m < p->moves.size(); ++m)
      for (const chunk& c : split_into_chunks(p->moves[m].bytes, staged_chunk_bytes)) {
        s.chunks.emplace_back(m, c);
        largest = std::max(largest, c.bytes);
      }
    // Blocks as large as the pair's largest chunk: a halo strip takes a small block.
    s.buffers[0] = staging.acquire(largest);
    s.buffers[1] = staging.acquire(largest);
    work.push_back(std::move(s));
  }
  return work;
}

void run_staged(std::span<staged_pair> work, event_pool& events) {
  std::size_t rounds = 0;
  for (const staged_pair& s : work) rounds = std::max(rounds, s.chunks.size());
  for (std::size_t r = 0; r < rounds; ++r) {
    for (staged_pair& s : work) {
      if (r >= s.chunks.size()) continue;
      const auto& [m, c] = s.chunks[r];
      const byte_move& move = s.pair->moves[m];
      staging_pool::lease& buffer = s.buffers[r % 2];
      device_guard guard(s.pair->src.device());
      buffer.order_before(s.pair->src.stream());
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(buffer.data(), static_cast<const std::byte*>(move.source) + c.offset,
                                        c.bytes, cudaMemcpyDeviceToHost, s.pair->src.stream()));
      detail::observe_work(s.pair->src.stream(), "copy");
      s.downloaded = events.record(s.pair->src.device(), s.pair->src.stream());
    }
    for (staged_pair& s : work) {
      if (r >= s.chunks.size()) continue;
      const auto& [m, c] = s.chunks[r];
      const byte_move& move = s.pair->moves[m];
      staging_pool::lease& buffer = s.buffers[r % 2];
      device_guard guard(s.pair->dst.device());
      s.downloaded.order_before(s.pair->dst.stream());
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(static_cast<std::byte*>(move.destination) + c.offset, buffer.data(),
                                        c.bytes, cudaMemcpyHostToDevice, s.pair->dst.stream()));
      detail::observe_work(s.pair->dst.stream(), "copy");
      buffer.fence(s.pair->dst.device(), s.pair->dst.stream());
    }
  }
  // The destination's memory may be in use by earlier work on its own stream only, which
  // the uploads follow; the source's data is produced on its own stream, which the downloads
  // follow, and the source may be overwritten only by later work on that stream.
}

}  // namespace

void copy_between(const device_group& source_group, const device_group& destination_group,
                  std::span<const byte_move> moves) {
  for (const byte_move& m : moves) {
    (void)source_group.device(m.src_slot);  // std::out_of_range names the slot
    (void)destination_group.device(m.dst_slot);
  }
  copy_between(detail::resources_of(source_group), detail::resources_of(destination_group), moves);
}

void copy_between(group_resources& source_group, group_resources& destination_group,
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
  std::map<std::pair<std::size_t, std::size_t>, pair_moves> by_pair;
  for (const byte_move& m : moves) {
    if (m.bytes == 0) continue;
    auto [it, fresh] = by_pair.try_emplace({m.src_slot, m.dst_slot});
    if (fresh) {
      it->second.src = {&source_group, m.src_slot};
      it->second.dst = {&destination_group, m.dst_slot};
      it->second.route = choose_route(policy, it->second.src.device(), it->second.dst.device(), links);
    }
    it->second.moves.push_back(m);
  }

  // Direct copies in three phases, so that no pair waits for another pair's copy: every
  // stream involved records where it stands; each copy's issuing stream waits for the other
  // side's mark and copies; then the other side waits for the copy (the source must not be
  // overwritten, nor the destination read, before it ran).
  // Everything that can fail before data moves (pool access, staging blocks) is done first,
  // so that a copy that throws for want of memory leaves its target as it was.
  std::vector<pair_moves*> staged;
  for (auto& [key, p] : by_pair) {
    if (p.src.stream() == p.dst.stream()) continue;
    if (p.route.kind == route::host_staged) {
      staged.push_back(&p);
      continue;
    }
    if (!same_group) {
      // The route comes from the process-wide record of enabled links, but a group grants
      // its pools only to its own devices' peers: let the issuing device reach the other
      // side's pool before copying over the link (a no-op once granted).
      const endpoint& issuer = p.route.issued_by_destination ? p.dst : p.src;
      const endpoint& other = p.route.issued_by_destination ? p.src : p.dst;
      other.group->pool_of_device(other.device()).grant_access(issuer.device());
    }
  }
  std::vector<staged_pair> staged_work = prepare_staged(staged, source_group.staging());

  copy_events events{source_group.events(), {}};
  std::vector<std::pair<const pair_moves*, event_pool::handle>> copied;
  for (auto& [key, p] : by_pair) {
    if (p.src.stream() == p.dst.stream()) continue;
    if (p.route.kind == route::host_staged) continue;
    const endpoint& other = p.route.issued_by_destination ? p.src : p.dst;
    (void)events.before_on(other);
  }
  for (auto& [key, p] : by_pair) {
    if (p.src.stream() == p.dst.stream()) {
      // Within one segment's stream: stream order is all the ordering needed.
      device_guard guard(p.dst.device());
      for (const byte_move& m : p.moves) copy_on_stream(m, p.src, p.dst, route::same_device, p.dst.stream());
      continue;
    }
    if (p.route.kind == route::host_staged) continue;
    // Pull on the destination's stream or push on the source's.
    const endpoint& issuer = p.route.issued_by_destination ? p.dst : p.src;
    const endpoint& other = p.route.issued_by_destination ? p.src : p.dst;
    device_guard guard(issuer.device());
    events.before_on(other).order_before(issuer.stream());
    for (const byte_move& m : p.moves) copy_on_stream(m, p.src, p.dst, p.route.kind, issuer.stream());
    copied.emplace_back(&p, source_group.events().record(issuer.device(), issuer.stream()));
  }
  for (const auto& [p, done] : copied) {
    const endpoint& other = p->route.issued_by_destination ? p->src : p->dst;
    done.order_before(other.stream());
  }
  run_staged(staged_work, source_group.events());
}

}  // namespace multigpu::transfer
