# NOEIRA_SANITIZE=ON (scripts/sanitize, scripts/fuzz; build-sanitize/): every C++ target
# built with AddressSanitizer and UndefinedBehaviorSanitizer, any finding fatal, and the
# libFuzzer targets of fuzz/ built besides the sanitized noeira-tests and noeira-bench
# (fuzz/CMakeLists.txt adds the coverage instrumentation they need). Clang only: GCC has no
# libFuzzer. CUDA stays off: nvcc's host compiler would not share the sanitizer runtime.
option(NOEIRA_SANITIZE "ASan + UBSan build with the libFuzzer targets of fuzz/ (Clang only)" OFF)

if(NOEIRA_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "NOEIRA_SANITIZE=ON needs Clang (libFuzzer and its runtimes), but "
                        "the C++ compiler is ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER}: "
                        "configure a fresh build directory with -DCMAKE_CXX_COMPILER=clang++ "
                        "(scripts/sanitize does).")
  endif()
  if(NOT NOEIRA_CUDA STREQUAL "OFF")
    message(FATAL_ERROR "NOEIRA_SANITIZE=ON builds the CPU code only: configure it with "
                        "-DNOEIRA_CUDA=OFF (scripts/sanitize does).")
  endif()
  # -O1: the sanitizers' recommended trade between speed and exact stacks; line tables
  # (not full debug information) are all a report needs, and compile faster.
  # Asserts on (ours and nlohmann's, e.g. a const operator[] on a missing key), and
  # libstdc++'s bounds checks of operator[] (std::array overruns inside a struct, which
  # ASan cannot see).
  add_compile_options(
    $<$<COMPILE_LANGUAGE:CXX>:-O1> $<$<COMPILE_LANGUAGE:CXX>:-gline-tables-only>
    $<$<COMPILE_LANGUAGE:CXX>:-UNDEBUG> $<$<COMPILE_LANGUAGE:CXX>:-D_GLIBCXX_ASSERTIONS>
    $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
    $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
    # `#pragma omp simd` loops that -O1 does not vectorise: a note, not a defect.
    $<$<COMPILE_LANGUAGE:CXX>:-Wno-pass-failed>)
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "noeira: sanitizers address,undefined; fuzz targets in fuzz/")
endif()

# Called once every target exists. Compiling is most of the sanitizer job's time: the
# harness and the tests, whose own run time is small next to the library's (arguments,
# reports, checks), compile at -O0, in half the time; the library stays at -O1. (The
# sources the fuzz targets exercise get -O1 back: fuzz/CMakeLists.txt.)
function(noeira_sanitize_targets)
  target_compile_options(noeira_harness PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  if(TARGET noeira-tests)
    target_compile_options(noeira-tests PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  endif()
endfunction()
