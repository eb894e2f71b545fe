# attnkit's install rules (native builds; included by CMakeLists.txt when
# ATTNKIT_INSTALL is on). `cmake --install build --prefix P` puts:
#   P/lib/libattnkit_core.a, libattnkit_model.a (and libattnkit_onnx.a with ATTNKIT_ONNX)
#   P/include/attnkit/*.h                       the public headers
#   P/lib/cmake/attnkit/attnkitConfig.cmake     find_package(attnkit): attnkit::core,
#     attnkitConfigVersion.cmake, attnkitTargets.cmake   attnkit::model (attnkit::onnx)
#   P/lib/pkgconfig/attnkit.pc                  pkg-config attnkit
# (lib is CMAKE_INSTALL_LIBDIR: lib/<multiarch> when the prefix is /usr on Debian.)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(attnkit_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/attnkit)

target_include_directories(attnkit_core PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set(attnkit_installed attnkit_core attnkit_model)
if(ATTNKIT_ONNX)
  list(APPEND attnkit_installed attnkit_onnx)
endif()
install(TARGETS ${attnkit_installed} EXPORT attnkitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/attnkit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT attnkitTargets NAMESPACE attnkit:: DESTINATION ${attnkit_cmake_dir})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attnkitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/attnkitConfig.cmake
                              INSTALL_DESTINATION ${attnkit_cmake_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnkitConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnkitConfig.cmake
              ${PROJECT_BINARY_DIR}/attnkitConfigVersion.cmake
        DESTINATION ${attnkit_cmake_dir})

# attnkit.pc: relocatable (prefix from the .pc file's own folder). The
# libraries are static, so what they link (Highway, the threads library) is
# in Requires and Libs, not the .private fields: `pkg-config --libs attnkit`
# links without --static.
file(RELATIVE_PATH attnkit_pc_to_prefix
     /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" attnkit_pc_to_prefix "${attnkit_pc_to_prefix}")
set(ATTNKIT_PC_THREADS "")
if(CMAKE_THREAD_LIBS_INIT)
  set(ATTNKIT_PC_THREADS " ${CMAKE_THREAD_LIBS_INIT}")
endif()
# With the ONNX export, its library and what it links (ONNX's messages and
# protobuf) too, and ATTNKIT_HAS_ONNX as for attnkit::onnx's users.
set(ATTNKIT_PC_ONNX "")
set(ATTNKIT_PC_ONNX_LIBS "")
set(ATTNKIT_PC_ONNX_REQUIRES "")
set(ATTNKIT_PC_ONNX_CFLAGS "")
if(ATTNKIT_ONNX)
  set(ATTNKIT_PC_ONNX " -lattnkit_onnx")
  set(ATTNKIT_PC_ONNX_LIBS " -lonnx_proto")
  set(ATTNKIT_PC_ONNX_REQUIRES ", protobuf")
  set(ATTNKIT_PC_ONNX_CFLAGS " -DATTNKIT_HAS_ONNX=1")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/attnkit.pc.in ${PROJECT_BINARY_DIR}/attnkit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attnkit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
