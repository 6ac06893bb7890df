# Sanitizer and fuzzing builds.
#
# QOPT_SANITIZE: comma-separated sanitizers for every target: address, undefined, leak, thread
# (ON means address,undefined). Nothing recovers (-fno-sanitize-recover=all): undefined
# behaviour stops the program like a memory error does, so a test that hits it fails.
#
# QOPT_FUZZ=ON: every target is built with -fsanitize=fuzzer-no-link plus address and undefined
# (libFuzzer needs clang: configure with CMAKE_CXX_COMPILER=clang++-14), and fuzz/ adds one
# libFuzzer executable per target. Use a build folder of its own (build-fuzz).
set(QOPT_SANITIZE "" CACHE STRING
    "Sanitizers for every target, comma-separated: address, undefined, leak, thread (ON = address,undefined)")
option(QOPT_FUZZ "Build the libFuzzer targets in fuzz/ (clang only; implies address,undefined)" OFF)

set(qopt_sanitizers "${QOPT_SANITIZE}")
if(qopt_sanitizers STREQUAL "ON" OR qopt_sanitizers STREQUAL "TRUE" OR qopt_sanitizers STREQUAL "1")
  set(qopt_sanitizers "address,undefined")
elseif(qopt_sanitizers STREQUAL "OFF" OR qopt_sanitizers STREQUAL "FALSE" OR qopt_sanitizers STREQUAL "0")
  set(qopt_sanitizers "")
endif()
if(QOPT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "QOPT_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14 "
                        "-DCMAKE_C_COMPILER=clang-14")
  endif()
  set(qopt_sanitizers "address,undefined")
endif()

if(qopt_sanitizers)
  string(REPLACE "," ";" qopt_sanitizer_list "${qopt_sanitizers}")
  foreach(sanitizer IN LISTS qopt_sanitizer_list)
    if(NOT sanitizer MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "QOPT_SANITIZE: unknown sanitizer '${sanitizer}' "
                          "(address, undefined, leak or thread)")
    endif()
  endforeach()
  set(qopt_sanitize_flags -fsanitize=${qopt_sanitizers} -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
  if(QOPT_FUZZ)
    list(APPEND qopt_sanitize_flags -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options(${qopt_sanitize_flags})
  add_link_options(-fsanitize=${qopt_sanitizers})
  message(STATUS "qopt: sanitizers ${qopt_sanitizers}")
endif()
