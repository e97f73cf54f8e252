# The floors of DESIGN.md section 1 as build targets. noeira_floor(TARGET FOLDER SOURCES ...
# [BELOW LIB]) makes the static library TARGET of FOLDER's sources, linked to the floor
# below (LIB, whose include views it inherits), and gives it one include directory of its
# own: ${CMAKE_BINARY_DIR}/floors/FOLDER, holding a symbolic link FOLDER -> the source
# folder and nothing else. So a source of the kernels floor finds "kernels/..." and only
# that: `#include "nn/memory_plan.h"` there is "No such file or directory", a build error.
# Files of one floor include each other by the same root-relative paths as everywhere
# ("nn/training/trainer_core.h"); only the folders they may see differ.

function(noeira_floor target folder)
  cmake_parse_arguments(F "" "BELOW" "SOURCES" ${ARGN})
  set(view ${CMAKE_BINARY_DIR}/floors/${folder})
  file(MAKE_DIRECTORY ${view})
  if(NOT EXISTS ${view}/${folder})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${folder} ${view}/${folder} SYMBOLIC)
  endif()
  add_library(${target} STATIC ${F_SOURCES})
  target_include_directories(${target} PUBLIC ${view})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${NOEIRA_WARNINGS}>)
  if(F_BELOW)
    target_link_libraries(${target} PUBLIC ${F_BELOW})
  endif()
endfunction()
