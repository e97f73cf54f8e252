# Shared by scripts/sanitize and scripts/fuzz (sourced, not run): configures and builds the
# sanitizer build (cmake/sanitize.cmake) and exports the sanitizers' run-time options.

# sanitize_build ROOT BUILD [TARGET...]: clang, ASan + UBSan + libFuzzer instrumentation,
# CUDA and MPI off (nvcc and Open MPI would bring uninstrumented runtimes and their noise),
# through ccache as scripts/build. Builds TARGETs (default: everything).
sanitize_build() {
  local root=$1 build=$2
  shift 2
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_COMPILER=clang++ -DNOEIRA_SANITIZE=ON -DNOEIRA_CUDA=OFF -DNOEIRA_MPI=OFF \
    "${launcher[@]}" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; return 1; }
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$build" -j "${NOEIRA_JOBS:-$(nproc)}" "${targets[@]}"
}

# Every finding stops the process with a report: leaks (at exit), memory errors, undefined
# behaviour. Exit status 99, so that a report is never taken for an exit status a test
# expects of noeira-bench (1, 2, 130). LSan reads the committed suppressions (third-party
# leaks only, each justified in the file). Set before the build too: test discovery runs
# the sanitized test binary.
sanitize_environment() {
  local root=$1
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:exitcode=99:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:exitcode=99:print_stacktrace=1:suppressions=$root/scripts/sanitizers/ubsan.supp}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/sanitizers/lsan.supp:print_suppressions=0}
}
