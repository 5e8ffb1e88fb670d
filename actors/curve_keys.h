// ZeroMQ CURVE key pairs: generation and key files. A run is secured when its manifest names key
// files ([security]); every TCP socket then uses CURVE and nothing without the right key can
// submit work, trajectories or weights.
//
// Files use ZeroMQ's certificate format (as czmq writes them), so existing tools can read them:
//   NAME.key         public key only, shareable
//   NAME.key_secret  public and secret key, written with mode 0600
//
//   curve
//       public-key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
//       secret-key = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/error.h"

namespace cuda_agent {

/// A CURVE key pair as Z85 text (40 characters each). `secret_z85` is empty when only the public
/// half was read.
struct CurveKeyPair {
  std::string public_z85;
  std::string secret_z85;
};

/// A fresh key pair from libsodium through zmq_curve_keypair. Fails when libzmq was built
/// without CURVE.
Expected<CurveKeyPair> generate_curve_keypair();

/// Writes DIR/NAME.key and DIR/NAME.key_secret (0600). Refuses to overwrite existing files.
Status write_curve_key_files(const CurveKeyPair& keys, const std::filesystem::path& dir,
                             std::string_view name);

/// Reads either kind of key file. Checks that each key is 40 characters of valid Z85 and, for a
/// secret file, that the public key is the one derived from the secret key. Errors name the file
/// and line.
Expected<CurveKeyPair> read_curve_key_file(const std::filesystem::path& file);

}  // namespace cuda_agent
