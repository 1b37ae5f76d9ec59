#pragma once
// Scale-out umbrella: communicators, launch bootstrap, teams and team_vector (host code;
// the team algorithms, which contain device code, are in multigpu/team/team_algorithms.hpp).
// The MPI and NCCL communicators come with their targets multigpu::mpi and multigpu::nccl;
// MULTIGPU_HAS_MPI / MULTIGPU_HAS_NCCL say whether they are linked.

#include <multigpu/comm/bootstrap.hpp>
#include <multigpu/comm/communicator.hpp>
#include <multigpu/comm/in_process_communicator.hpp>
#include <multigpu/team/team.hpp>
#include <multigpu/team/team_plan.hpp>
#include <multigpu/team/team_vector.hpp>
#if MULTIGPU_HAS_MPI
#include <multigpu/comm/mpi_communicator.hpp>
#endif
#if MULTIGPU_HAS_NCCL
#include <multigpu/comm/nccl_communicator.hpp>
#endif
