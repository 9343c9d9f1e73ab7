# Test helpers (STYLE.md, "Tests").
#
# redist_add_unit_test(NAME name SOURCES ... [LIBS ...])      label "unit"; links the
#   LIBS given (default redist_plan: geometry, layout and plan, no MPI)
# redist_add_mpi_test(NAME name [SOURCES ...] RANKS 1 2 3 4
#                     [LIBS ...] [ARGS ...] [LABELS ...] [TIMEOUT s] [COMMAND target]
#                     [ENV VAR=value ...])
#   one ctest per rank count, named name_<r>ranks, labelled "mpi" and "ranks_<r>",
#   oversubscribed and allowed to run as root, so a plain `ctest` works in
#   containers and on 2-core machines. Without SOURCES, NAME is an existing
#   executable target (a benchmark run small so it never rots); COMMAND runs
#   another target under this test name; ENV sets variables for the run.
#   Programs of tests labelled runtime or threads are also dependencies of the
#   target `threaded_tests` (what `make check-sanitize` builds with ThreadSanitizer).
set(REDIST_MPIRUN ${CMAKE_SOURCE_DIR}/scripts/mpirun.sh)

function(redist_add_unit_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  if(NOT T_LIBS)
    set(T_LIBS redist_plan)
  endif()
  target_link_libraries(${T_NAME} PRIVATE GTest::gtest_main ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "unit")
endfunction()

function(redist_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;COMMAND" "SOURCES;RANKS;LIBS;ARGS;LABELS;ENV" ${ARGN})
  if(T_SOURCES)
    add_executable(${T_NAME} ${T_SOURCES})
    target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest MPI::MPI_CXX)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_COMMAND)
    set(T_COMMAND ${T_NAME})  # the program to run: the test's own, or another target's
  endif()
  if(T_LABELS MATCHES "runtime|threads")  # what the ThreadSanitizer build needs (threaded_tests)
    set_property(GLOBAL APPEND PROPERTY REDIST_THREADED_PROGRAMS ${T_COMMAND})
  endif()
  foreach(r IN LISTS T_RANKS)
    set(tn ${T_NAME}_${r}ranks)
    add_test(NAME ${tn} COMMAND ${REDIST_MPIRUN} -np ${r} $<TARGET_FILE:${T_COMMAND}> ${T_ARGS})
    set_tests_properties(${tn} PROPERTIES LABELS "mpi;ranks_${r};${T_LABELS}"
                         PROCESSORS ${r} TIMEOUT ${T_TIMEOUT})
    if(T_ENV)
      set_tests_properties(${tn} PROPERTIES ENVIRONMENT "${T_ENV}")
    endif()
  endforeach()
endfunction()
