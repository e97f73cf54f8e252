# Run by noeira_catch_tests (cmake/catch_tests.cmake) after each build of the test binary:
# writes OUT, one add_test per line of `EXECUTABLE SPEC --list-test-names-only`.
# (Catch exits with the number of tests it lists.)
execute_process(COMMAND "${EXECUTABLE}" "${SPEC}" --list-test-names-only
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result
  WORKING_DIRECTORY "${WORKING_DIR}")
if(NOT result MATCHES "^[0-9]+$" OR listing STREQUAL "")
  message(FATAL_ERROR "${EXECUTABLE} '${SPEC}' --list-test-names-only listed no tests "
                      "(${result}):\n${errors}")
endif()
# A name may hold ';' and brackets, which a CMake list would split or join: they are
# stood in for while the lines are a list, and restored per name.
string(REPLACE ";" "<noeira-semicolon>" listing "${listing}")
string(REPLACE "[" "<noeira-open>" listing "${listing}")
string(REPLACE "]" "<noeira-close>" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  if(line STREQUAL "")
    continue()
  endif()
  string(REPLACE "<noeira-semicolon>" ";" name "${line}")
  string(REPLACE "<noeira-open>" "[" name "${name}")
  string(REPLACE "<noeira-close>" "]" name "${name}")
  # Catch's test spec reads ',' '[' ']' and '\' specially; escaped, the name matches itself.
  set(spec "${name}")
  foreach(char "\\" "," "[" "]")
    string(REPLACE "${char}" "\\${char}" spec "${spec}")
  endforeach()
  string(APPEND script
    "add_test([==[${name}]==] [==[${EXECUTABLE}]==] [==[${spec}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIR}]==]"
    " LABELS [==[${LABEL}]==] ENVIRONMENT [==[${ENVIRONMENT}]==])\n")
endforeach()
file(WRITE "${OUT}" "${script}")
