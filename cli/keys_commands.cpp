#include <cstdio>
#include <string>

#include "actors/curve_keys.h"
#include "cli/command.h"

namespace cuda_agent::cli {

void add_keys_commands(CLI::App& app, CommandResult& result) {
  auto* keys = app.add_subcommand("keys", "CURVE keys that secure a run's TCP sockets");
  keys->require_subcommand(1);
  auto* gen = keys->add_subcommand(
      "generate",
      "Write a new CURVE key pair: DIR/NAME.key (public) and DIR/NAME.key_secret "
      "(0600). Name the files in the manifest's [security] section.");
  struct Args {
    std::string dir = "keys";
    std::string name;
  };
  auto args = std::make_shared<Args>();
  gen->add_option("--dir", args->dir, "directory to write into")->capture_default_str();
  gen->add_option("--name", args->name, "file name stem, e.g. server or client")->required();
  gen->callback([args, &result] {
    auto keys = generate_curve_keypair();
    if (!keys) {
      result.exit_code = report(keys.error());
      return;
    }
    if (Status s = write_curve_key_files(*keys, args->dir, args->name); !s) {
      result.exit_code = report(s.error());
      return;
    }
    std::printf("wrote %s/%s.key and %s/%s.key_secret\npublic key: %s\n", args->dir.c_str(),
                args->name.c_str(), args->dir.c_str(), args->name.c_str(),
                keys->public_z85.c_str());
  });
}

}  // namespace cuda_agent::cli
