# Small helpers so each target in a folder's CMakeLists.txt is a few lines.
#
#   vanguard_cc_library(NAME foo SRCS foo.cc HDRS foo.h DEPS vanguard_common)
#   vanguard_cc_binary(NAME vanguard-foo SRCS main.cc DEPS foo)
#   vanguard_cc_test(NAME foo_test SRCS foo_test.cc DEPS foo [LABELS unit] [ENV K=V])

set(VANGUARD_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)

function(vanguard_cc_library)
  cmake_parse_arguments(A "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  if(A_SRCS)
    add_library(${A_NAME} STATIC ${A_SRCS} ${A_HDRS})
    target_link_libraries(${A_NAME} PUBLIC ${A_DEPS})
    target_compile_options(${A_NAME} PRIVATE ${VANGUARD_WARNINGS})
  else()
    add_library(${A_NAME} INTERFACE)
    target_link_libraries(${A_NAME} INTERFACE ${A_DEPS})
  endif()
endfunction()

function(vanguard_cc_binary)
  cmake_parse_arguments(A "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} ${VANGUARD_SANITIZER_LIBS})
  target_compile_options(${A_NAME} PRIVATE ${VANGUARD_WARNINGS})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()

# LABELS: unit (default), integration (needs Postgres via VANGUARD_TEST_PG), e2e. Each label
# also names a target that builds its tests and what they run: `ninja vanguard_tests_unit`.
function(vanguard_cc_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${A_NAME} ${A_SRCS})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gmock GTest::gtest_main
                                          ${VANGUARD_SANITIZER_LIBS})
  target_compile_options(${A_NAME} PRIVATE ${VANGUARD_WARNINGS})
  if(VANGUARD_SANITIZE)
    # A test's own file at -O0 (the code it tests stays at -O1, cmake/sanitizers.cmake):
    # gtest/gmock expand into code that costs a third more to compile at -O1 and gains
    # nothing from it at run time; every check and option of the sanitizer is the same.
    target_compile_options(${A_NAME} PRIVATE -O0)
  endif()
  add_test(NAME ${A_NAME} COMMAND ${A_NAME})
  if(NOT A_LABELS)
    set(A_LABELS unit)
  endif()
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 120)
  endif()
  if(VANGUARD_SANITIZE)
    math(EXPR A_TIMEOUT "${A_TIMEOUT} * 3")  # instrumented code runs several times slower
  endif()
  set_tests_properties(${A_NAME} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
    ENVIRONMENT "VANGUARD_BIN_DIR=${PROJECT_BINARY_DIR}/bin;${A_ENV}")
  foreach(label ${A_LABELS})
    if(NOT TARGET vanguard_tests_${label})
      add_custom_target(vanguard_tests_${label})
    endif()
    add_dependencies(vanguard_tests_${label} ${A_NAME})
  endforeach()
endfunction()
