# Build helpers shared by every module. A module declares its library with gpuop_library() and
# its tests with gpuop_test(); both get the project's warnings and sanitizer settings.
# -Wno-missing-field-initializers: designated initializers that rely on member defaults are the
# intended way to pass options structs.

set(GPUOP_WARNINGS -Wall -Wextra -Werror -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Wunused -Woverloaded-virtual
    -Wno-missing-field-initializers
    -Wimplicit-fallthrough)

if(GPUOP_SANITIZE)
  set(GPUOP_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
      -fno-sanitize-recover=all)
  add_compile_options(${GPUOP_SANITIZER_FLAGS})
  add_link_options(${GPUOP_SANITIZER_FLAGS})
endif()

# Applies the project's warnings to TARGET's own sources (not to third-party headers).
function(gpuop_warnings target)
  target_compile_options(${target} PRIVATE ${GPUOP_WARNINGS})
endfunction()

# gpuop_library(NAME SOURCES ... [DEPS ...] [PUBLIC_DEPS ...])
# A static library rooted at src/, so includes read "common/process.h".
function(gpuop_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
  gpuop_warnings(${name})
endfunction()

# gpuop_test(NAME SOURCES ... [DEPS ...] LABELS unit|integration|e2e|gpu [TIMEOUT s] [WHOLE])
# Unit tests are registered per test case so ctest can run and report them one by one. Tests
# that share an expensive fixture (a control plane) pass WHOLE: the binary is one ctest test and
# its GoogleTest environment starts the fixture once.
function(gpuop_test name)
  cmake_parse_arguments(ARG "WHOLE" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 60)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest)
  if(NOT "GTest::gtest_main" IN_LIST ARG_DEPS AND NOT ARG_WHOLE)
    target_link_libraries(${name} PRIVATE GTest::gtest_main)
  endif()
  gpuop_warnings(${name})
  if(ARG_WHOLE)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
  else()
    include(GoogleTest)
    gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                         DISCOVERY_TIMEOUT 30)
  endif()
endfunction()
