# Shared by scripts/bench, test, sanitize and checkpoint-hashes (sourced, not run).

# noeira_data_dir ROOT: exports NOEIRA_DATA as an absolute path: the caller's value made
# absolute against the caller's directory (CMake writes it into every test's environment
# and ctest runs the tests in the build directory, where "../shared/data" named nothing),
# else ROOT/../shared/data where it exists. A value that names no directory stays as
# given, for the loaders' own error to name it.
noeira_data_dir() {
  local root=$1
  if [ -n "${NOEIRA_DATA:-}" ]; then
    if [ -d "$NOEIRA_DATA" ]; then export NOEIRA_DATA=$(cd "$NOEIRA_DATA" && pwd); fi
  elif [ -d "$root/../shared/data" ]; then
    export NOEIRA_DATA=$(cd "$root/../shared/data" && pwd)
  fi
}
