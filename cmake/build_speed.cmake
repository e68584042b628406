# What a clean build spends its time on, and the two settings that halve it (docs/building.md).
#
# Debug info. RelWithDebInfo's -g writes full DWARF (every variable's locations, every type) for
# code that is mostly Boost.Asio/Beast coroutines and protobuf: measured on the gateway, it is 40 %
# of the compile's CPU and 2.7x the object's size, and the links then copy it into every binary.
# -g1 keeps function names and line tables: backtraces, sanitizer reports and perf still name
# file and line; only gdb loses local variables. -DINFERTEL_DEBUG_INFO=full brings -g back.
set(INFERTEL_DEBUG_INFO "lines" CACHE STRING
    "Debug info of RelWithDebInfo builds: lines (-g1, the default) or full (-g, for gdb)")
set_property(CACHE INFERTEL_DEBUG_INFO PROPERTY STRINGS lines full)
if(INFERTEL_DEBUG_INFO STREQUAL "lines")
  string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" CMAKE_CXX_FLAGS_RELWITHDEBINFO
         "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
elseif(NOT INFERTEL_DEBUG_INFO STREQUAL "full")
  message(FATAL_ERROR "INFERTEL_DEBUG_INFO is lines or full, not '${INFERTEL_DEBUG_INFO}'")
endif()

# The linker. About thirty executables link the agent's static libraries (the agent, one test
# binary per area, the benches); lld links each several times faster than GNU ld and in less
# memory. Used when the compiler accepts it (Debian's lld package); -DINFERTEL_LLD=OFF for ld.
option(INFERTEL_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(INFERTEL_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld INFERTEL_HAVE_LLD)
  if(INFERTEL_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  else()
    message(STATUS "lld not found: linking with the compiler's default linker")
  endif()
endif()
