#pragma once
// Distributed N-D arrays (docs/mdarray.md): distributed_mdarray<T, Rank> with halos, their
// exchange, stencils, the algorithm set, for_each_tile and replicated scalars. CUDA code:
// include from .cu files.

#include <multigpu/mdarray/algorithms.hpp>
#include <multigpu/mdarray/decomposition.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>
#include <multigpu/mdarray/for_each_tile.hpp>
#include <multigpu/mdarray/halo.hpp>
#include <multigpu/mdarray/per_slot.hpp>
#include <multigpu/mdarray/replicated.hpp>
#include <multigpu/mdarray/stencil.hpp>
