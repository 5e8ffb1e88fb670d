# Every external dependency is found here, once. Debian 12 packages on CPU machines; on offline
# GPU nodes the same packages unpacked by scripts/install-bundle (CMAKE_PREFIX_PATH points there)
# plus the node's own PyTorch libtorch (Torch_DIR).

find_package(Threads REQUIRED)
find_package(CUDAToolkit REQUIRED)

# Torch before RocksDB: RocksDB's config leaks GFLAGS_USE_TARGET_NAMESPACE, which breaks
# Caffe2's gflags target.
find_package(Torch REQUIRED)
# Torch's config puts its flags in TORCH_CXX_FLAGS; we attach them to one wrapper target instead
# of the global flags so that only torch-linked libraries see them.
add_library(ca_torch INTERFACE)
target_link_libraries(ca_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(ca_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
# PyTorch 2.11's libtorch.so exports a broken partial std::filesystem. libstdc++ must be the first
# NEEDED entry of every torch-linked binary so the real one binds (docs/BUILDING.md); the
# post-build check in CudaAgentTargets.cmake fails the build when it is not.
# The shared libstdc++ is named by its full path: a toolchain that links libstdc++ statically
# (seen on the GPU nodes: `-lstdc++` there gave no NEEDED entry at all) would otherwise leave
# std::filesystem to bind to libtorch's copy.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
                OUTPUT_VARIABLE CA_LIBSTDCXX_GUESS OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 30)
if(IS_ABSOLUTE "${CA_LIBSTDCXX_GUESS}" AND EXISTS "${CA_LIBSTDCXX_GUESS}")
  get_filename_component(CA_LIBSTDCXX_HINT "${CA_LIBSTDCXX_GUESS}" REALPATH)
  get_filename_component(CA_LIBSTDCXX_HINT "${CA_LIBSTDCXX_HINT}" DIRECTORY)
endif()
find_library(CA_LIBSTDCXX NAMES libstdc++.so.6 libstdc++.so
             HINTS ${CA_LIBSTDCXX_HINT} PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib
             NO_CACHE REQUIRED)
message(STATUS "Shared libstdc++ linked first into torch binaries: ${CA_LIBSTDCXX}")
target_link_options(ca_torch INTERFACE "LINKER:--no-as-needed" "${CA_LIBSTDCXX}")
set(CUDA_AGENT_TORCH_VERSION "${Torch_VERSION}")
# One precompiled <torch/torch.h> for every translation unit that includes it (ca_torch_pch and
# ca_use_torch_pch in CudaAgentTargets.cmake). On the 2-core CPU machine, one TU at a time,
# Debian's libtorch 1.13: model_main.cpp 90 s without it and 64 s with it, learner_state_test.cpp
# 78 s and 47 s, trainer.cpp 55 s and 30 s (the header itself: ~100 s, once); 32 such TUs are most
# of CI's build. A torch-free TU pays for it (engine_server.cpp: 26 s -> 43 s), so those in these
# targets are marked SKIP_PRECOMPILE_HEADERS.
# GCC uses a PCH only under the same code-generation flags, so every torch-linked TU is built
# -fPIC (libraries are already; executables would otherwise be -fPIE), and -Winvalid-pch says
# where a TU could not use it. Default: on with libtorch 1.x (the CPU machines and CI), off with
# the GPU nodes' 2.x until it is run there.
if(Torch_VERSION VERSION_LESS 2)
  set(CA_TORCH_PCH_DEFAULT ON)
else()
  set(CA_TORCH_PCH_DEFAULT OFF)
endif()
option(CUDA_AGENT_TORCH_PCH "Precompile <torch/torch.h> once for every torch-linked target"
       ${CA_TORCH_PCH_DEFAULT})
if(CUDA_AGENT_TORCH_PCH)
  target_compile_options(ca_torch INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:-fPIC;-Winvalid-pch>")
endif()

find_package(RocksDB REQUIRED)
find_package(CapnProto REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
# The OpenAI-compatible policy backend (rollout/http_post.h).
find_package(CURL REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
# libsodium: CURVE keys and content hashes (BLAKE2b, core/content_hash.h; SHA-256 of task sources).
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
# The tokenizer (model/tokenizer.h): PCRE2 for the pre-tokenizer regexes (JIT), utf8proc for NFC
# and Unicode categories (60 kB, where ICU would add about 19 MiB to the GPU-node bundle).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)

# CAF 0.17 ships no CMake config or pkg-config file.
find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(ca_caf INTERFACE)
target_include_directories(ca_caf SYSTEM INTERFACE ${CAF_INCLUDE_DIR})
target_link_libraries(ca_caf INTERFACE ${CAF_IO_LIBRARY} ${CAF_CORE_LIBRARY} Threads::Threads)

if(CUDA_AGENT_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()

find_program(READELF_EXECUTABLE readelf REQUIRED)

# --- c10d backends for the learner's data-parallel group (learner/learner_group.cpp) ----------
# Both optional; learner_group.cpp compiles each backend only when found and otherwise answers
# `learner.backend_unavailable` at run time. Sets CA_C10D_HAS_GLOO / CA_C10D_HAS_NCCL (0 or 1),
# CA_C10D_INCLUDE_DIRS (extra headers) and CA_C10D_LIBRARIES (extra link libraries).
#  - Gloo: ProcessGroupGloo.hpp includes <gloo/...>. Debian's libtorch 1.13 links the system
#    libgloo, so libgloo-dev's headers match it. A PyTorch 2.x libtorch carries its own gloo
#    inside libtorch_cpu: only headers shipped in its own include directory are taken, never a
#    system copy of another gloo version.
#  - NCCL: only with CUDA libtorch. nccl.h is PyTorch's (<site-packages>/nvidia/nccl/include,
#    beside <site-packages>/torch), or CA_NCCL_ROOT / NCCL_ROOT, or the CUDA toolkit's.
set(CA_C10D_HAS_GLOO 0)
set(CA_C10D_HAS_NCCL 0)
set(CA_C10D_INCLUDE_DIRS "")
set(CA_C10D_LIBRARIES "")
find_path(CA_C10D_DIR torch/csrc/distributed/c10d/ProcessGroupGloo.hpp
          PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
if(CA_C10D_DIR)
  if(Torch_VERSION VERSION_LESS 2)
    find_path(CA_GLOO_INCLUDE_DIR gloo/context.h HINTS ${TORCH_INCLUDE_DIRS})
  else()
    find_path(CA_GLOO_INCLUDE_DIR gloo/context.h PATHS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
  endif()
  if(CA_GLOO_INCLUDE_DIR AND EXISTS "${CA_GLOO_INCLUDE_DIR}/gloo/config.h")
    set(CA_C10D_HAS_GLOO 1)
    list(APPEND CA_C10D_INCLUDE_DIRS ${CA_GLOO_INCLUDE_DIR})
  endif()
endif()
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  get_filename_component(CA_TORCH_SITE_PACKAGES "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  find_path(CA_NCCL_INCLUDE_DIR nccl.h
            HINTS ${CA_NCCL_ROOT} $ENV{NCCL_ROOT} ${CA_TORCH_SITE_PACKAGES}/nvidia/nccl
                  ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(CA_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${CA_NCCL_ROOT} $ENV{NCCL_ROOT} ${CA_TORCH_SITE_PACKAGES}/nvidia/nccl
                     ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib lib64)
  if(CA_NCCL_INCLUDE_DIR AND CA_NCCL_LIBRARY AND EXISTS
     "${TORCH_INSTALL_PREFIX}/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
    set(CA_C10D_HAS_NCCL 1)
    list(APPEND CA_C10D_INCLUDE_DIRS ${CA_NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
    list(APPEND CA_C10D_LIBRARIES ${CA_NCCL_LIBRARY})
  endif()
endif()
message(STATUS "c10d backends for the learner group: gloo=${CA_C10D_HAS_GLOO} "
               "nccl=${CA_C10D_HAS_NCCL} (${CA_GLOO_INCLUDE_DIR} ${CA_NCCL_INCLUDE_DIR})")
# --- end of c10d backends ------------------------------------------------------------------
