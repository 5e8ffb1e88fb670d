# Fails when a binary links libtorch (or c10) but libstdc++.so.6 is not ahead of every torch
# library in its NEEDED list. PyTorch 2.11's libtorch.so exports 64 unversioned std::filesystem
# symbols (a broken partial copy); a binary whose std::filesystem binds there crashes.
#
#   cmake -DBINARY=path -DREADELF=readelf -P CheckNeededOrder.cmake
#   cmake -DREADELF_OUTPUT=file -P CheckNeededOrder.cmake   (tests: a saved `readelf -d` output)
if(DEFINED READELF_OUTPUT)
  file(READ "${READELF_OUTPUT}" dyn)
  set(BINARY "${READELF_OUTPUT}")
else()
  execute_process(COMMAND "${READELF}" -d "${BINARY}" OUTPUT_VARIABLE dyn RESULT_VARIABLE rc
                  TIMEOUT 60)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "CheckNeededOrder: readelf -d ${BINARY} failed (${rc})")
  endif()
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^]\n]+\\]" lines "${dyn}")
set(needed "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE ".*\\[([^]]+)\\].*" "\\1" lib "${line}")
  list(APPEND needed "${lib}")
endforeach()
set(stdcxx -1)
set(first_torch -1)
set(first_torch_name "")
set(i 0)
foreach(lib IN LISTS needed)
  if(lib MATCHES "^libstdc\\+\\+\\.so" AND stdcxx EQUAL -1)
    set(stdcxx ${i})
  endif()
  if(lib MATCHES "^lib(torch|c10)" AND first_torch EQUAL -1)
    set(first_torch ${i})
    set(first_torch_name "${lib}")
  endif()
  math(EXPR i "${i} + 1")
endforeach()
if(first_torch EQUAL -1)
  return()  # not torch-linked: nothing to check
endif()
if(stdcxx EQUAL -1 OR stdcxx GREATER first_torch)
  list(JOIN needed ", " shown)
  message(FATAL_ERROR
    "CheckNeededOrder: ${BINARY} links ${first_torch_name} but libstdc++.so.6 is not ahead of it "
    "in NEEDED (${shown}). Link torch through the ca_torch target, which puts -lstdc++ first.")
endif()
