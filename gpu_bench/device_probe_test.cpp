// GPU test (ctest label `gpu`): skips with a message where there is no GPU.
#include "gpu_bench/device_probe.h"

#include <gtest/gtest.h>

namespace cuda_agent {
namespace {

class DeviceProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = list_devices();
    if (list_.devices.empty()) GTEST_SKIP() << "no GPU: " << list_.no_gpu_reason;
  }
  DeviceList list_;
};

TEST_F(DeviceProbe, ListsPlausibleDevices) {
  for (const auto& d : list_.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_GE(d.cc_major, 7);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GT(d.memory_bytes, 1LL << 30);
    EXPECT_GT(d.driver_version, 0);
    std::printf("GPU %d: %s cc %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB, SM clock %d MHz, driver %d\n",
                d.index, d.name.c_str(), d.cc_major, d.cc_minor, d.multiprocessors,
                d.memory_bytes / double(1 << 30), d.l2_bytes / double(1 << 20),
                d.sm_clock_khz / 1000, d.driver_version);
  }
}

TEST_F(DeviceProbe, HealthCheckPassesOnEveryDevice) {
  for (const auto& d : list_.devices) {
    Status s = health_check(d.index, std::chrono::seconds(30));
    EXPECT_TRUE(s) << s.error().to_string();
  }
}

TEST_F(DeviceProbe, HealthCheckOfAMissingDeviceIsATypedError) {
  Status s = health_check(static_cast<int>(list_.devices.size()) + 7, std::chrono::seconds(5));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "cuda.error");
  EXPECT_NE(s.error().message.find("cudaSetDevice"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace cuda_agent

// Not a GPU test: runs everywhere and checks the no-GPU path is a reason, not a crash.
TEST(DeviceProbeAnywhere, NoGpuIsAReasonNotAnError) {
  auto list = cuda_agent::list_devices();
  EXPECT_TRUE(!list.devices.empty() || !list.no_gpu_reason.empty());
}
