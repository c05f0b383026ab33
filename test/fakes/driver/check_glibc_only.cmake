# A test: FILE needs nothing but glibc, and (with EXPORTS) exports no name that does not match
# EXPORTS, a regular expression. The fake driver libraries and the simulated driver container's
# programs must run in containers that have nothing else (../CMakeLists.txt).
#   cmake -DREADELF=<readelf> -DFILE=<file> [-DEXPORTS=<regex>] -P check_glibc_only.cmake
cmake_policy(VERSION 3.25)
set(allowed libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2
    ld-linux-aarch64.so.1)

execute_process(COMMAND ${READELF} -d -W ${FILE} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${FILE} failed (${rc})")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed_lines "${dynamic}")
set(needed)
set(bad)
foreach(line IN LISTS needed_lines)
  string(REGEX REPLACE ".*\\[(.*)\\].*" "\\1" library "${line}")
  list(APPEND needed ${library})
  if(NOT library IN_LIST allowed)
    list(APPEND bad ${library})
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "${FILE} needs ${bad}, which a container with nothing but glibc lacks "
                      "(NEEDED: ${needed}; allowed: ${allowed})")
endif()
message(STATUS "${FILE}: NEEDED ${needed}")

if(DEFINED EXPORTS)
  execute_process(COMMAND ${READELF} --dyn-syms -W ${FILE} OUTPUT_VARIABLE symbols
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "readelf --dyn-syms ${FILE} failed (${rc})")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  set(foreign)
  foreach(line IN LISTS lines)
    # "  12: 0000000000012340   42 FUNC    GLOBAL DEFAULT   11 nvmlInit_v2"
    if(line MATCHES "^ *[0-9]+: [0-9a-f]+ +[0-9a-fx]+ +[A-Z_]+ +(GLOBAL|WEAK|UNIQUE|GNU_UNIQUE) +[A-Z]+ +([0-9]+|ABS) +([^ @]+)")
      set(name "${CMAKE_MATCH_3}")
      if(NOT name MATCHES "${EXPORTS}")
        list(APPEND foreign ${name})
      endif()
    endif()
  endforeach()
  if(foreign)
    message(FATAL_ERROR "${FILE} exports names outside ${EXPORTS}: ${foreign}")
  endif()
endif()
