// Nsight Compute's raw CSV into the agent's table (gpu_bench/nsight_compute.h). CPU only: the
// input is the shape of `ncu --csv --page raw --print-units base --log-file F` output.
#include "gpu_bench/nsight_compute.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace cuda_agent {
namespace {

std::string header() {
  std::string h =
      R"("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC")";
  for (const std::string& m : nsight_compute_metrics()) h += ",\"" + m + "\"";
  return h + "\n";
}

// duration, registers, static smem, dynamic smem, occupancy, dram, sm
std::string row(int id, const std::string& kernel, const char* values) {
  return "\"" + std::to_string(id) + "\",\"4242\",\"python3\",\"127.0.0.1\",\"" + kernel +
         "\",\"1\",\"7\",\"(256, 1, 1)\",\"(1024, 1, 1)\",\"0\",\"9.0\"," + values + "\n";
}

const char* kUnits =
    R"("","","","","","","","","","","","nsecond","register/thread","byte","byte","%","%","%")"
    "\n";

TEST(NsightCompute, ParsesLaunchesAggregatesPerKernelAndSortsByTime) {
  const std::string csv =
      "==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
      "==PROF== Profiling \"layer_norm_kernel\": 0%....50%....100% - 9 passes\n" +
      header() + kUnits +
      row(0, "layer_norm_kernel(const float *, float *, int)",
          R"("300,000","32","0","4,096","80.5","90.0","40.0")") +
      row(1, "relu_kernel(float *, int)", R"("10000","16","0","0","50","70","20")") +
      row(2, "layer_norm_kernel(const float *, float *, int)",
          R"("100000","32","0","4096","79.5","88.0","42.0")") +
      "==PROF== Disconnected from process 4242\n";
  auto k = parse_nsight_compute_csv(csv);
  ASSERT_TRUE(k) << k.error().to_string();
  ASSERT_EQ(k->size(), 2u);
  const NcuKernel& ln = (*k)[0];
  EXPECT_EQ(ln.name, "layer_norm_kernel(const float *, float *, int)");
  EXPECT_EQ(ln.launches, 2);
  EXPECT_DOUBLE_EQ(ln.total_us, 400.0);  // ns -> us, thousands separators dropped
  EXPECT_DOUBLE_EQ(ln.registers, 32);
  EXPECT_DOUBLE_EQ(ln.shared_bytes, 4096);
  EXPECT_DOUBLE_EQ(ln.occupancy_pct, 80.0);
  EXPECT_DOUBLE_EQ(ln.dram_pct, 89.0);
  EXPECT_DOUBLE_EQ(ln.sm_pct, 41.0);
  EXPECT_EQ((*k)[1].name, "relu_kernel(float *, int)");
  EXPECT_DOUBLE_EQ((*k)[1].total_us, 10.0);

  const std::string table = render_nsight_compute(*k, 2, 40);
  EXPECT_NE(table.find("Nsight Compute: 2 forward call(s)"), std::string::npos) << table;
  EXPECT_NE(table.find("200.00"), std::string::npos) << table;  // mean per launch
  EXPECT_NE(table.find("relu_kernel"), std::string::npos) << table;
  // The line budget holds: title + header + 1 kernel.
  const std::string short_table = render_nsight_compute(*k, 2, 3);
  EXPECT_EQ(std::count(short_table.begin(), short_table.end(), '\n'), 3) << short_table;
}

TEST(NsightCompute, NoLaunchesIsAnEmptyListAndABadOutputIsAnError) {
  auto none = parse_nsight_compute_csv(header() + kUnits);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_NE(render_nsight_compute(*none, 5, 40).find("no kernel"), std::string::npos);

  auto missing = parse_nsight_compute_csv("==PROF== nothing profiled\n");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "bench.ncu");
  auto no_metric = parse_nsight_compute_csv("\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n");
  ASSERT_FALSE(no_metric);
  EXPECT_NE(no_metric.error().message.find("launch__registers_per_thread"), std::string::npos);
}

TEST(NsightCompute, FailureReasonsFromTheLog) {
  EXPECT_NE(nsight_compute_failure("==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                                   "permission to access NVIDIA GPU Performance Counters")
                .find("NVreg_RestrictProfilingToAdminUsers"),
            std::string::npos);
  EXPECT_EQ(nsight_compute_failure("==PROF== ok\n==ERROR== Failed to prepare kernel\nmore"),
            "==ERROR== Failed to prepare kernel");
  EXPECT_EQ(nsight_compute_failure("==PROF== Disconnected"), "");
}

TEST(NsightCompute, FindsNcuOnlyWhereItIsExecutable) {
  EXPECT_EQ(find_nsight_compute("off"), "");
  EXPECT_EQ(find_nsight_compute(""), "");
  EXPECT_EQ(find_nsight_compute("/nonexistent/ncu"), "");
  const auto dir = std::filesystem::temp_directory_path() / "ncu-find-test";
  std::filesystem::create_directories(dir);
  const auto fake = dir / "ncu";
  std::ofstream(fake) << "#!/bin/sh\n";
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  EXPECT_EQ(find_nsight_compute(fake.string()), fake.string());
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", (dir.string() + ":" + saved).c_str(), 1);
  EXPECT_EQ(find_nsight_compute("auto"), fake.string());
  ::setenv("PATH", saved.c_str(), 1);
  std::filesystem::remove_all(dir);
}

TEST(NsightCompute, ArgvProfilesOnlyTheMarkedRegionIntoTheLogFile) {
  auto argv = nsight_compute_argv("/opt/ncu", "/job/ncu.csv");
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv.front(), "/opt/ncu");
  auto has = [&](const std::string& a, const std::string& b) {
    for (std::size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == a && argv[i + 1] == b) return true;
    return false;
  };
  EXPECT_TRUE(has("--profile-from-start", "off"));
  EXPECT_TRUE(has("--page", "raw"));
  EXPECT_TRUE(has("--log-file", "/job/ncu.csv"));
}

}  // namespace
}  // namespace cuda_agent
