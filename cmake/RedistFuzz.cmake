# The fuzz build (-DREDIST_FUZZ=ON; README "Tests", scripts/fuzz.sh): libFuzzer
# targets over the pure layers, with ASan and UBSan. Included by the top-level
# CMakeLists.txt instead of the normal build.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR
    "REDIST_FUZZ=ON needs clang (libFuzzer is part of clang), but the C++ compiler is "
    "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}). Use `make fuzz`, or configure a fresh "
    "build directory with -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "
    "(Debian: scripts/setup.sh fuzz installs clang-14 and libclang-rt-14-dev).")
endif()

# Every object, the library's included, gets coverage instrumentation for the
# fuzzer and both sanitizers; UBSan findings abort (no recovery), so a signed
# overflow is a crash the fuzzer keeps, not a line in a log.
set(REDIST_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=undefined)
add_compile_options(-fsanitize=fuzzer-no-link ${REDIST_SANITIZE} -g -O1 -fno-omit-frame-pointer)
add_link_options(${REDIST_SANITIZE})

# libFuzzer's runtime (libclang_rt.fuzzer) is a package of its own on Debian.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=fuzzer)
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] REDIST_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT REDIST_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "REDIST_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link -fsanitize=fuzzer; install libFuzzer's "
    "runtime (Debian 12: libclang-rt-14-dev, or run scripts/setup.sh fuzz)")
endif()

add_subdirectory(src)
add_subdirectory(fuzz)
