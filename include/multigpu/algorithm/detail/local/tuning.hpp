#pragma once
// Every tuning number of the algorithms' own kernels and launch decisions: block sizes, items
// per thread, grid caps, and the limits that choose between a kernel of ours and CUB's, each
// with why it has its value. Changing one changes speed, never a result; the tests probe both
// sides of the one-launch limits through the shapes built from these (small_reduce_shape,
// small_scan_shape). Sizes that correctness fixes (alignments, shared-memory checks, kernels of
// one thread) stay beside the code they guard. Plain constants, so that host-only code (the
// sort's split search, tested on the CPU) can include it.

#include <cstddef>

namespace multigpu::detail::tuning {

// ---- Kernels of one element a thread (gather and scatter, the sort's candidates, is_sorted) --

/// Bound by memory, nothing shared between threads: 256, the usual block for such kernels.
inline constexpr unsigned elementwise_threads = 256;
/// One binary search a thread, and few of them (a round's candidates, k + 1 owners): smaller blocks spread them wider.
inline constexpr unsigned search_threads = 128;
/// is_sorted's grid-stride search: 2048 blocks of 256 fill an H100 (132 SMs of 2048 threads) about twice over.
inline constexpr unsigned is_sorted_max_blocks = 2048;

// ---- One-launch reduction of a small piece (local/small_reduce.hpp) -------------------------

/// One block is the whole launch, so a large one: 512 threads keep enough loads in flight.
inline constexpr int small_reduce_threads = 512;
/// Loads in flight per thread and round, by accumulator size: as many as keep a thread within 128 registers.
template <std::size_t AccumulatorBytes>
inline constexpr int small_reduce_items = AccumulatorBytes <= 4 ? 16 : AccumulatorBytes <= 8 ? 8 : 4;
/// Largest one-launch piece: 16384 to 8 bytes, so double sums at 2^16/4 a piece skip CUB's two launches; 4096 to 32.
template <std::size_t AccumulatorBytes>
inline constexpr std::size_t small_reduce_limit = AccumulatorBytes <= 8 ? 16384 : AccumulatorBytes <= 32 ? 4096 : 0;

// ---- One-launch scan of a small piece (local/small_scan.hpp) --------------------------------

/// One block is the whole launch, so a large one: 512 threads keep enough loads in flight.
inline constexpr int small_scan_threads = 512;
/// Items a thread holds, by element size: a tile's transposition takes 32 KiB of a block's 48 KiB of shared memory.
template <std::size_t ElementBytes>
inline constexpr int small_scan_items = ElementBytes <= 4    ? 16
                                        : ElementBytes <= 8  ? 8
                                        : ElementBytes <= 16 ? 4
                                        : ElementBytes <= 32 ? 2
                                                             : 1;
/// Tiles of a one-launch piece: its one block walks them in turn, so two (16384 floats); none over 32-byte elements.
template <std::size_t ElementBytes>
inline constexpr std::size_t small_scan_tiles = ElementBytes <= 32 ? 2 : 0;

// ---- Order-keeping reduction (local/ordered_reduce.hpp) -------------------------------------

/// Threads of a block: 256, as in CUB's own device reduction, which the commutative path takes.
inline constexpr int ordered_reduce_threads = 256;
/// Items a thread folds per tile, by item size: fewer for wider items, so that a tile stays within the staging bytes.
template <std::size_t ItemBytes>
inline constexpr int ordered_reduce_items = ItemBytes <= 8 ? 8 : ItemBytes <= 64 ? 4 : 1;
/// Shared memory a block stages through before the leaner arrangements: half the 48 KiB a block may hold statically.
inline constexpr std::size_t ordered_reduce_staging_bytes = 24 * 1024;
/// Blocks per multiprocessor at most: enough to fill the device, few enough partials for the one block that folds them.
inline constexpr int ordered_reduce_blocks_per_multiprocessor = 2;

// ---- The sort's exact splitting (sort/splitters.hpp) ---------------------------------------

/// Candidates a run offers per target and round at most: runs of 2^27 elements split in three rounds (host waits).
inline constexpr std::size_t split_candidates_most = 512;
/// Candidates a run offers at least, however many runs: the rounds stay about log16 of the run's size.
inline constexpr std::size_t split_candidates_least = 16;
/// A round's counts, runs^2 (runs - 1) per candidate a run offers: within 2^18, 2 MiB of pinned memory the pool keeps.
inline constexpr std::size_t split_counts_per_round = std::size_t{1} << 18;

}  // namespace multigpu::detail::tuning
