#pragma once
// Every size-changing algorithm of the filter family, one face each: copy_if, remove_copy_if
// and remove_if (copy_if.hpp), unique and unique_copy (unique.hpp), the partitions
// (partition.hpp). rebalance is beside resize (container/distributed_vector.hpp), and
// reduce_by_key has a face of its own.

#include <multigpu/algorithm/copy_if.hpp>
#include <multigpu/algorithm/partition.hpp>
#include <multigpu/algorithm/unique.hpp>
