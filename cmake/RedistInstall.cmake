# `cmake --install build --prefix P` (docs/c_api.md, "Install"):
#   P/include/redist/          the public headers (C++, redist.h, scalapack.h, blacs.h)
#   P/lib/                      libredist.a and the static layers under it, libredist_c.a
#                               (the C API), libredist_scalapack.so (the drop-ins)
#   P/lib/cmake/redist/         find_package(redist): targets redist::redist (C++),
#                               redist::c (C API), redist::scalapack (drop-ins); MPI
#                               and Threads found again by find_dependency;
#                               redist::apps and the tiled algorithms under it
#                               (installed by apps/CMakeLists.txt into this export)
#   P/lib/pkgconfig/            redist.pc (C++ and C API), redist_scalapack.pc
# The build tree is a package too, without installing: CMAKE_PREFIX_PATH=build
# (redistTargets.cmake exported there by the top CMakeLists.txt) and
# PKG_CONFIG_PATH=build (redist-uninstalled.pc, redist_scalapack-uninstalled.pc).
# Not for `pip install .` (the wheel holds the Python package only).
if(SKBUILD)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/redist DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The static layers in link order (each after those that use it): what the
# exported targets name, and redist.pc's Libs.
set(redist_layers redist redist_cost redist_runtime redist_plan redist_layout redist_mpi redist_geometry)
set_target_properties(redist PROPERTIES EXPORT_NAME redist)
set_target_properties(redist_c PROPERTIES EXPORT_NAME c)
set(redist_installed redist_c ${redist_layers} redist_kernels)
if(TARGET redist_scalapack)
  set_target_properties(redist_scalapack PROPERTIES EXPORT_NAME scalapack)
  list(APPEND redist_installed redist_scalapack)
endif()
install(TARGETS ${redist_installed} EXPORT redistTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(redist_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/redist)
install(EXPORT redistTargets NAMESPACE redist:: DESTINATION ${redist_cmake_dir})
# The runtime's static library links hwloc when it was found (src/runtime): its
# imported target PkgConfig::HWLOC must exist in the consumer too.
get_property(redist_hwloc GLOBAL PROPERTY REDIST_HWLOC_USED)
set(redist_find_hwloc "")
set(redist_pc_requires "ompi-c")
if(redist_hwloc)
  set(redist_find_hwloc "find_dependency(PkgConfig)\npkg_check_modules(HWLOC REQUIRED QUIET IMPORTED_TARGET hwloc)")
  set(redist_pc_requires "ompi-c hwloc")
endif()
file(WRITE ${CMAKE_BINARY_DIR}/redistConfig.cmake.in [=[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(MPI COMPONENTS C CXX)
find_dependency(Threads)
@redist_find_hwloc@
include("${CMAKE_CURRENT_LIST_DIR}/redistTargets.cmake")
check_required_components(redist)
]=])
configure_package_config_file(${CMAKE_BINARY_DIR}/redistConfig.cmake.in ${CMAKE_BINARY_DIR}/redistConfig.cmake
                              INSTALL_DESTINATION ${redist_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/redistConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/redistConfig.cmake ${CMAKE_BINARY_DIR}/redistConfigVersion.cmake
        DESTINATION ${redist_cmake_dir})

# pkg-config: paths relative to the prefix (${pcfiledir}), so the installed tree
# can be moved. Static libraries: the C++ runtime and MPI come with them; MPI's
# C API only (redist uses no MPI C++ bindings, so <mpi.h> leaves them out).
set(redist_libs "")
foreach(l ${redist_layers})
  string(REGEX REPLACE "^lib" "" l ${l})
  string(APPEND redist_libs " -l${l}")
endforeach()
file(RELATIVE_PATH redist_pc_to_prefix ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
set(redist_pc_head "prefix=\${pcfiledir}/${redist_pc_to_prefix}
libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}
includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}
")
file(WRITE ${CMAKE_BINARY_DIR}/redist.pc "${redist_pc_head}
Name: redist
Description: moves distributed arrays between data distributions (MPI): C++ API and C API (-lredist_c)
Version: ${PROJECT_VERSION}
Requires: ${redist_pc_requires}
Cflags: -I\${includedir} -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1
Libs: -L\${libdir} -lredist_c${redist_libs} -lstdc++ -lm -pthread
")
install(FILES ${CMAKE_BINARY_DIR}/redist.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# Without installing: pkg-config takes NAME-uninstalled.pc before NAME.pc from
# PKG_CONFIG_PATH=build (the build tree's headers and libraries, in place).
set(redist_dirs "")
foreach(l redist_c ${redist_layers})
  list(APPEND redist_dirs "$<TARGET_FILE_DIR:${l}>")
endforeach()
set(redist_libdirs " -L$<JOIN:$<REMOVE_DUPLICATES:${redist_dirs}>, -L>")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/redist-uninstalled.pc CONTENT "includedir=${CMAKE_SOURCE_DIR}/include

Name: redist
Description: moves distributed arrays between data distributions (MPI), from its build tree
Version: ${PROJECT_VERSION}
Requires: ${redist_pc_requires}
Cflags: -I\${includedir} -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1
Libs:${redist_libdirs} -lredist_c${redist_libs} -lstdc++ -lm -pthread
")
if(TARGET redist_scalapack)
  # The drop-ins before ScaLAPACK (docs/scalapack.md, "Use"): the link order comes with them
  # (-L and -l: pkg-config users such as CMake's pkg_check_modules move full paths).
  get_filename_component(redist_scalapack_dir ${SCALAPACK_LIBRARY} DIRECTORY)
  get_filename_component(redist_scalapack_name ${SCALAPACK_LIBRARY} NAME_WE)
  string(REGEX REPLACE "^lib" "" redist_scalapack_name ${redist_scalapack_name})
  file(WRITE ${CMAKE_BINARY_DIR}/redist_scalapack.pc "${redist_pc_head}
Name: redist_scalapack
Description: ScaLAPACK's p?gemr2d, p?trmr2d and p?tran on redist (link before ScaLAPACK)
Version: ${PROJECT_VERSION}
Requires: ompi-c
Cflags: -I\${includedir}
Libs: -L\${libdir} -lredist_scalapack -L${redist_scalapack_dir} -l${redist_scalapack_name}
")
  install(FILES ${CMAKE_BINARY_DIR}/redist_scalapack.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/redist_scalapack-uninstalled.pc CONTENT "includedir=${CMAKE_SOURCE_DIR}/include

Name: redist_scalapack
Description: ScaLAPACK's p?gemr2d, p?trmr2d and p?tran on redist (link before ScaLAPACK), from its build tree
Version: ${PROJECT_VERSION}
Requires: ompi-c
Cflags: -I\${includedir}
Libs: -L$<TARGET_FILE_DIR:redist_scalapack> -lredist_scalapack -L${redist_scalapack_dir} -l${redist_scalapack_name}
")
endif()
