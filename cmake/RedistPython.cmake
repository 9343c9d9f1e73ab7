# REDIST_PYTHON: build the Python extension (python/CMakeLists.txt): ON, OFF, or
# AUTO (the default, decided again at each configure): on when the Python found
# (the venv's .venv/bin/python when there is one, the one scikit-build-core runs
# under `pip install .`) can import nanobind and REDIST_SANITIZE is empty.
if(NOT DEFINED Python_EXECUTABLE AND NOT SKBUILD AND EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python)
  set(Python_EXECUTABLE ${CMAKE_SOURCE_DIR}/.venv/bin/python)
endif()
set(redist_python_default OFF)
if(NOT REDIST_SANITIZE)
  find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
  if(Python_FOUND)
    execute_process(COMMAND ${Python_EXECUTABLE} -m nanobind --cmake_dir
                    OUTPUT_VARIABLE redist_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE redist_nanobind_rc ERROR_QUIET)
    if(redist_nanobind_rc EQUAL 0)
      set(redist_python_default ON)
    endif()
  endif()
endif()
set(REDIST_PYTHON AUTO CACHE STRING "Build the Python package redist (nanobind): ON, OFF or AUTO")
set(redist_python ${REDIST_PYTHON})
if(redist_python STREQUAL "AUTO")
  set(redist_python ${redist_python_default})
endif()
if(redist_python)
  if(NOT redist_nanobind_dir)
    message(FATAL_ERROR "REDIST_PYTHON=ON needs nanobind importable by ${Python_EXECUTABLE} (scripts/setup.sh)")
  endif()
  list(APPEND CMAKE_PREFIX_PATH ${redist_nanobind_dir})
  find_package(nanobind CONFIG REQUIRED)
  add_subdirectory(${CMAKE_SOURCE_DIR}/python ${CMAKE_BINARY_DIR}/python-build)
  message(STATUS "redist: Python package with ${Python_EXECUTABLE}")
endif()
