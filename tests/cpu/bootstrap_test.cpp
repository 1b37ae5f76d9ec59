#include <multigpu/comm/bootstrap.hpp>

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace mg = multigpu;

namespace {
std::optional<mg::launch_info> parse(const std::map<std::string, std::string>& env) {
  return mg::launch_from_environment([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST(Bootstrap, NoLauncherIsNoAnswer) { EXPECT_FALSE(parse({}).has_value()); }

TEST(Bootstrap, OpenMpi) {
  auto info = parse({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_TRUE(info);
  EXPECT_EQ(*info, (mg::launch_info{3, 8, 1, "OMPI_COMM_WORLD_*"}));
}

TEST(Bootstrap, PmiWithAndWithoutLocalRank) {
  auto hydra = parse({{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"MPI_LOCALRANKID", "2"}});
  ASSERT_TRUE(hydra);
  EXPECT_EQ(*hydra, (mg::launch_info{5, 6, 2, "PMI_*"}));
  auto pmi = parse({{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"PMI_LOCAL_RANK", "0"}, {"MPI_LOCALRANKID", "2"}});
  EXPECT_EQ(pmi->local_rank, 0);  // PMI_LOCAL_RANK comes first
  auto bare = parse({{"PMI_RANK", "4"}, {"PMI_SIZE", "6"}});
  EXPECT_EQ(bare->local_rank, 4);  // no local rank: one host
}

TEST(Bootstrap, Slurm) {
  auto info = parse({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "3"}});
  ASSERT_TRUE(info);
  EXPECT_EQ(*info, (mg::launch_info{7, 16, 3, "SLURM_*"}));
}

TEST(Bootstrap, Torchrun) {
  auto info = parse({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}});
  ASSERT_TRUE(info);
  EXPECT_EQ(*info, (mg::launch_info{1, 2, 1, "torchrun"}));
}

TEST(Bootstrap, OpenMpiWinsOverSlurmUnderSrunMpirun) {
  auto info = parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "2"},
                     {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  EXPECT_EQ(info->source, "OMPI_COMM_WORLD_*");
  EXPECT_EQ(info->rank, 2);
}

TEST(Bootstrap, MalformedValuesThrow) {
  EXPECT_THROW(parse({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"RANK", "1 "}, {"WORLD_SIZE", "2"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"RANK", "0"}}), std::invalid_argument);
  EXPECT_THROW(parse({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "5"}}), std::invalid_argument);
  try {
    parse({{"OMPI_COMM_WORLD_RANK", "abc"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("OMPI_COMM_WORLD_RANK"), std::string::npos) << e.what();
  }
}

TEST(Bootstrap, LocalDeviceWrapsAroundVisibleDevices) {
  EXPECT_EQ(mg::local_device_for(0, 1), 0);
  EXPECT_EQ(mg::local_device_for(3, 1), 0);
  EXPECT_EQ(mg::local_device_for(5, 4), 1);
  EXPECT_EQ(mg::local_device_for(7, 8), 7);
  EXPECT_THROW(mg::local_device_for(0, 0), std::invalid_argument);
  EXPECT_THROW(mg::local_device_for(-1, 2), std::invalid_argument);
}
