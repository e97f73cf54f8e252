# Run on every build (target noeira_git_info, CMakeLists.txt): writes OUT, a C++ header
# with the source tree's commit and dirty flag, and rewrites it only when one of them
# changed, so a commit (or a clean tree turning dirty) recompiles harness/env/host_info.cpp
# and nothing else, without a reconfigure. Outside a git checkout, or without git, the
# sha is "" and the tree counts as clean.
#   cmake -DSOURCE_DIR=... -DGIT=... -DOUT=... -P git_info.cmake
set(sha "")
set(dirty false)
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SOURCE_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE head_rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(head_rc EQUAL 0 AND head MATCHES "^[0-9a-f]+$")
    set(sha "${head}")
    # --no-optional-locks: a status run by the build never writes the repository's index.
    execute_process(COMMAND "${GIT}" --no-optional-locks -C "${SOURCE_DIR}"
                            status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE status_rc ERROR_QUIET)
    if(status_rc EQUAL 0 AND NOT changes STREQUAL "")
      set(dirty true)
    endif()
  endif()
endif()
string(CONCAT text "// Generated at build time by cmake/git_info.cmake; do not edit.\n"
                   "#pragma once\n"
                   "inline constexpr const char* kNoeiraGitSha = \"${sha}\";\n"
                   "inline constexpr bool kNoeiraGitDirty = ${dirty};\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
