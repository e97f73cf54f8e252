# One ctest test per Catch2 test case, found after each build of the test binary (as
# Catch2's catch_discover_tests, whose 2.13 script this replaces: it split a name at ';',
# swallowed every name after an unbalanced '[' into one test that matched nothing and
# passed, and cut an ENVIRONMENT property at its first ';').
#
#   noeira_catch_tests(TARGET SPEC <catch test spec> LABEL <ctest label>
#                      ENVIRONMENT <VAR=value>...)
#
# Each call adds the test cases SPEC selects, labelled LABEL, run with ENVIRONMENT.
function(noeira_catch_tests target)
  cmake_parse_arguments(arg "" "SPEC;LABEL" "ENVIRONMENT" ${ARGN})
  string(SHA1 key "${arg_SPEC}")
  string(SUBSTRING ${key} 0 7 key)
  set(tests_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests-${key}.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    BYPRODUCTS "${tests_file}"
    COMMAND "${CMAKE_COMMAND}" -D "EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "SPEC=${arg_SPEC}" -D "LABEL=${arg_LABEL}" -D "ENVIRONMENT=${arg_ENVIRONMENT}"
            -D "WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}" -D "OUT=${tests_file}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/catch_add_tests.cmake"
    VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include-${key}.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS \"${tests_file}\")\n  include(\"${tests_file}\")\nelse()\n"
    "  add_test(${target}_NOT_BUILT-${key} ${target}_NOT_BUILT-${key})\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
