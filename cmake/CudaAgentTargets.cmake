# Helpers that every folder uses to declare its library, tests, benchmarks and executables, so
# that the rules below hold everywhere:
#  - every executable is checked after linking: if it links libtorch, libstdc++ must come first
#    in its NEEDED list (cmake/CheckNeededOrder.cmake); the build fails otherwise;
#  - tests are GoogleTest binaries registered with CTest; tests labelled `gpu` are reported as
#    skipped (not passed) when their binary says it found no GPU;
#  - benchmarks are listed in ${CMAKE_BINARY_DIR}/benchmarks.tsv for scripts/run-benchmarks and
#    are never run by CTest.

# Designated initializers leave members at their defaults on purpose.
set(CA_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wno-missing-field-initializers)

# ca_library(NAME <folder> [SOURCES ...] [DEPS ...]): the folder's library, cuda_agent::<folder>.
# With no SOURCES it is a header-only INTERFACE library (a part whose code has not landed yet still
# states its place in the layering).
function(ca_library)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  if(A_SOURCES)
    add_library(ca_${A_NAME} STATIC ${A_SOURCES})
    target_include_directories(ca_${A_NAME} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(ca_${A_NAME} PUBLIC ${A_DEPS})
    target_compile_options(ca_${A_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${CA_WARNINGS}>)
    set_target_properties(ca_${A_NAME} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  else()
    add_library(ca_${A_NAME} INTERFACE)
    target_include_directories(ca_${A_NAME} INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
    target_link_libraries(ca_${A_NAME} INTERFACE ${A_DEPS})
  endif()
  add_library(cuda_agent::${A_NAME} ALIAS ca_${A_NAME})
endfunction()

# Attaches the NEEDED-order check to an executable target.
function(ca_check_needed target)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${target}>
            -DREADELF=${READELF_EXECUTABLE}
            -P ${PROJECT_SOURCE_DIR}/cmake/CheckNeededOrder.cmake
    VERBATIM)
endfunction()

# ca_use_torch_pch(target ...): the targets' translation units start from the precompiled
# <torch/torch.h> of ca_torch_pch (cmake/Dependencies.cmake), when CUDA_AGENT_TORCH_PCH is on.
# For torch-linked targets whose sources include torch; targets not defined (tests or benchmarks
# off) are skipped.
if(CUDA_AGENT_TORCH_PCH)
  # The warnings too: -Wpedantic changes what GCC predefines (__cpp_runtime_arrays), and a PCH
  # built without it is not used.
  add_library(ca_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp)
  target_link_libraries(ca_torch_pch PRIVATE ca_torch)
  target_compile_options(ca_torch_pch PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${CA_WARNINGS}>)
  target_precompile_headers(ca_torch_pch PRIVATE <torch/torch.h>)
endif()
function(ca_use_torch_pch)
  if(NOT TARGET ca_torch_pch)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    if(TARGET ${target})
      target_precompile_headers(${target} REUSE_FROM ca_torch_pch)
    endif()
  endforeach()
endfunction()

# ca_executable(NAME n SOURCES ... DEPS ...)
function(ca_executable)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  target_compile_options(${A_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${CA_WARNINGS}>)
  ca_check_needed(${A_NAME})
endfunction()

# ca_test(NAME n SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s]): one GoogleTest binary, one CTest
# entry. Label `gpu` for tests that need a GPU: they call GTEST_SKIP with a message when none is
# present and CTest then reports them as skipped.
function(ca_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT CUDA_AGENT_BUILD_TESTS)
    return()
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  ca_executable(NAME ${A_NAME} SOURCES ${A_SOURCES} DEPS ${A_DEPS} GTest::gtest GTest::gmock
                GTest::gtest_main)
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT}
                       ENVIRONMENT "CUDA_AGENT_SOURCE_DIR=${PROJECT_SOURCE_DIR};CUDA_AGENT_BINARY_DIR=${PROJECT_BINARY_DIR}")
  if(A_LABELS)
    set_tests_properties(${A_NAME} PROPERTIES LABELS "${A_LABELS}")
  endif()
  if("gpu" IN_LIST A_LABELS)
    set_tests_properties(${A_NAME} PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endif()
endfunction()

# ca_benchmark(NAME n SOURCES ... DEPS ... LABEL cpu|gpu): a benchmark binary that checks
# correctness, then prints its figures and how they were measured. Listed in benchmarks.tsv.
set_property(GLOBAL PROPERTY CA_BENCHMARKS "")
function(ca_benchmark)
  cmake_parse_arguments(A "" "NAME;LABEL" "SOURCES;DEPS" ${ARGN})
  if(NOT CUDA_AGENT_BUILD_TESTS)
    return()
  endif()
  ca_executable(NAME ${A_NAME} SOURCES ${A_SOURCES} DEPS ${A_DEPS})
  set_property(GLOBAL APPEND PROPERTY CA_BENCHMARKS "${A_NAME}\t${A_LABEL}\t$<TARGET_FILE:${A_NAME}>")
endfunction()

# Called once at the end of the top-level CMakeLists.
function(ca_write_benchmark_list)
  get_property(rows GLOBAL PROPERTY CA_BENCHMARKS)
  list(JOIN rows "\n" body)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/benchmarks.tsv CONTENT "name\tlabel\tpath\n${body}\n")
endfunction()

# ca_forbid_dependency(<library> <forbidden>...): fails the configure step when <library> links,
# directly or through any library it uses, one of <forbidden> (all named without cuda_agent::), so
# a client library cannot start linking the server it talks to.
function(ca_forbid_dependency library)
  set(seen "")
  set(queue ca_${library})
  while(queue)
    list(POP_FRONT queue t)
    if(t IN_LIST seen OR NOT TARGET ${t})
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(aliased ${t} ALIASED_TARGET)
    if(aliased)
      list(APPEND queue ${aliased})
      continue()
    endif()
    get_target_property(type ${t} TYPE)
    set(deps "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(deps ${t} LINK_LIBRARIES)
    endif()
    get_target_property(interface_deps ${t} INTERFACE_LINK_LIBRARIES)
    foreach(d IN LISTS deps interface_deps)
      if(d)
        list(APPEND queue ${d})
      endif()
    endforeach()
  endwhile()
  foreach(f IN LISTS ARGN)
    if(ca_${f} IN_LIST seen)
      message(FATAL_ERROR "cuda_agent::${library} must not link cuda_agent::${f} (a client library "
                          "links the wire client of a service, not the service)")
    endif()
  endforeach()
endfunction()
