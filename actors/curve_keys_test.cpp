#include "actors/curve_keys.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

namespace cuda_agent {
namespace {

std::filesystem::path fresh_dir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("ca_keys_") + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(CurveKeys, GeneratedPairWritesAndReadsBack) {
  auto dir = fresh_dir("rt");
  auto keys = generate_curve_keypair();
  ASSERT_TRUE(keys) << keys.error().to_string();
  ASSERT_TRUE(write_curve_key_files(*keys, dir, "server"));
  auto secret = read_curve_key_file(dir / "server.key_secret");
  ASSERT_TRUE(secret) << secret.error().to_string();
  EXPECT_EQ(secret->public_z85, keys->public_z85);
  EXPECT_EQ(secret->secret_z85, keys->secret_z85);
  auto pub = read_curve_key_file(dir / "server.key");
  ASSERT_TRUE(pub);
  EXPECT_TRUE(pub->secret_z85.empty());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "server.key_secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Never overwrites.
  EXPECT_EQ(write_curve_key_files(*keys, dir, "server").error().code, "keys.exists");
  std::filesystem::remove_all(dir);
}

TEST(CurveKeys, BadFilesNameTheFileAndLine) {
  auto dir = fresh_dir("bad");
  std::filesystem::create_directories(dir);
  EXPECT_EQ(read_curve_key_file(dir / "nope.key").error().code, "keys.missing");
  { std::ofstream(dir / "short.key") << "curve\n    public-key = \"abc\"\n"; }
  auto e = read_curve_key_file(dir / "short.key");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("short.key:2"), std::string::npos) << e.error().message;
  // A public key that does not match the secret one.
  auto a = generate_curve_keypair();
  auto b = generate_curve_keypair();
  ASSERT_TRUE(a && b);
  {
    std::ofstream(dir / "mixed.key_secret") << "curve\n    public-key = \"" << a->public_z85
                                            << "\"\n    secret-key = \"" << b->secret_z85 << "\"\n";
  }
  auto m = read_curve_key_file(dir / "mixed.key_secret");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("does not belong"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cuda_agent
