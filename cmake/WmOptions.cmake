# Warning flags and the helper every wmtune library uses.
set(WM_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wnon-virtual-dtor -Wshadow=local)

# wm_library(NAME SOURCES... DEPS ...): one CMake library per layer; its public headers live in
# include/ below the library's folder and it links only what it names.
function(wm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
  target_compile_options(${name} PRIVATE ${WM_WARNINGS})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()
