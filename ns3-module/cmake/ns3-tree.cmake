# SPDX-License-Identifier: GPL-2.0-only
# Builds the out-of-tree module (and so `dltrace simulate`) against an ns-3
# source tree built with ./ns3 (for example the release-profile tree that
# scripts/ns3-contrib-build.sh makes) instead of an installed ns-3.
#
# DLTRACE_NS3_TREE (cache PATH):
#   empty (default)  the tree scripts/ns3-contrib-build.sh builds under the
#                    source root (build-ns3-tree/ns3-*/ns-3.*) when it has been
#                    built, else the installed ns-3 (Debian's libns3-dev)
#   PATH             the ns-3 tree at PATH (the folder with ./ns3; it must be
#                    built: build/lib/libns3*-core*.so, build/include/ns3/)
#   OFF              always the installed ns-3
# A tree has no installed CMake package (ns3Targets.cmake is written by
# `./ns3 install` only), so its libraries become imported targets here, with
# the names Debian's package gives (ns3::libcore, ...). Programs that link them
# carry the tree's build/lib in their RUNPATH (build and install), so they run
# without LD_LIBRARY_PATH.

# Sets OUT_VAR to the tree to build against, or to "" for the installed ns-3.
function(dltrace_find_ns3_tree out_var)
  set(DLTRACE_NS3_TREE "" CACHE PATH
      "ns-3 source tree (built with ./ns3) to build the ns-3 module against; empty: build-ns3-tree/ when built, else the installed ns-3; OFF: the installed ns-3")
  set(_tree "${DLTRACE_NS3_TREE}")
  if(_tree STREQUAL "")
    file(GLOB _candidates "${PROJECT_SOURCE_DIR}/build-ns3-tree/ns3-*/ns-3.*/build/lib")
    set(_tree "")
    foreach(_lib_dir ${_candidates})
      file(GLOB _core "${_lib_dir}/libns3*-core*.so")
      if(_core)
        get_filename_component(_tree "${_lib_dir}/../.." ABSOLUTE)
        message(STATUS "dltrace: found the ns-3 tree ${_tree} (scripts/ns3-contrib-build.sh); "
                       "-DDLTRACE_NS3_TREE=OFF builds against the installed ns-3 instead")
        break()
      endif()
    endforeach()
  elseif(NOT _tree)  # OFF, NO, FALSE, 0
    set(_tree "")
  else()
    get_filename_component(_tree "${_tree}" ABSOLUTE)
    if(NOT EXISTS "${_tree}/build/include/ns3/core-module.h")
      message(FATAL_ERROR "dltrace: DLTRACE_NS3_TREE=${DLTRACE_NS3_TREE} is not a built ns-3 tree "
                          "(no build/include/ns3/core-module.h; run ./ns3 configure and ./ns3 build there, "
                          "or scripts/ns3-contrib-build.sh PATH)")
    endif()
  endif()
  set(${out_var} "${_tree}" PARENT_SCOPE)
endfunction()

# Sets ns3_FOUND, ns3_VERSION, DLTRACE_NS3_TARGETS and DLTRACE_NS3_BUILD (one
# line naming the tree, its build profile and whether NS_LOG is compiled in)
# in the caller's scope, with one imported target ns3::lib<module> for each of
# MODULES. A module the tree did not build is a configure error: the user
# named this tree (or built it with our script), so falling back silently to
# another ns-3 would measure the wrong one.
macro(dltrace_import_ns3_tree tree modules)
  set(ns3_FOUND TRUE)
  set(DLTRACE_NS3_TARGETS)
  file(STRINGS "${tree}/VERSION" ns3_VERSION LIMIT_COUNT 1)
  if(ns3_VERSION VERSION_LESS 3.37)
    message(FATAL_ERROR "dltrace: the ns-3 tree ${tree} is ns-3 ${ns3_VERSION}; the module needs 3.37 or newer")
  endif()
  # The tree's own configure settings: profile, logging and asserts.
  set(_dltrace_tree_cache "${tree}/cmake-cache/CMakeCache.txt")
  set(_dltrace_tree_profile "unknown")
  set(_dltrace_tree_log OFF)
  set(_dltrace_tree_assert OFF)
  if(EXISTS "${_dltrace_tree_cache}")
    file(STRINGS "${_dltrace_tree_cache}" _dltrace_lines REGEX "^(build_profile:INTERNAL|NS3_LOG:BOOL|NS3_ASSERT:BOOL)=")
    foreach(_dltrace_line ${_dltrace_lines})
      if(_dltrace_line MATCHES "^build_profile:INTERNAL=(.*)$")
        set(_dltrace_tree_profile "${CMAKE_MATCH_1}")
      elseif(_dltrace_line MATCHES "^NS3_LOG:BOOL=(.*)$")
        set(_dltrace_tree_log "${CMAKE_MATCH_1}")
      elseif(_dltrace_line MATCHES "^NS3_ASSERT:BOOL=(.*)$")
        set(_dltrace_tree_assert "${CMAKE_MATCH_1}")
      endif()
    endforeach()
  endif()
  # ns-3 turns logging and asserts on for debug builds whatever NS3_LOG says.
  if(_dltrace_tree_profile STREQUAL "debug")
    set(_dltrace_tree_log ON)
    set(_dltrace_tree_assert ON)
  endif()
  string(TOUPPER "${_dltrace_tree_profile}" _dltrace_profile_upper)
  set(_dltrace_definitions NS3_BUILD_PROFILE_${_dltrace_profile_upper})
  if(_dltrace_tree_log)
    list(APPEND _dltrace_definitions NS3_LOG_ENABLE)
    set(_dltrace_log_words "NS_LOG compiled in")
  else()
    set(_dltrace_log_words "NS_LOG compiled out")
  endif()
  if(_dltrace_tree_assert)
    list(APPEND _dltrace_definitions NS3_ASSERT_ENABLE)
  endif()
  foreach(_dltrace_module ${modules})
    # libns3-core.so (Debian's sources), libns3.37-core-release.so, libns3-dev-core-default.so, ...
    file(GLOB _dltrace_libs "${tree}/build/lib/libns3*-${_dltrace_module}*.so")
    set(_dltrace_lib "")
    foreach(_dltrace_candidate ${_dltrace_libs})
      get_filename_component(_dltrace_name "${_dltrace_candidate}" NAME)
      if(_dltrace_name MATCHES "^libns3(\\.[0-9]+|-dev)?-${_dltrace_module}(-(debug|default|release|optimized|relwithdebinfo|minsizerel))?\\.so$")
        set(_dltrace_lib "${_dltrace_candidate}")
      endif()
    endforeach()
    if(NOT _dltrace_lib)
      message(FATAL_ERROR "dltrace: the ns-3 tree ${tree} has no built ${_dltrace_module} module "
                          "(no ${tree}/build/lib/libns3*-${_dltrace_module}*.so); build it there, e.g. "
                          "./ns3 configure --enable-modules '${_dltrace_module}' && ./ns3 build")
    endif()
    if(NOT TARGET ns3::lib${_dltrace_module})
      add_library(ns3::lib${_dltrace_module} SHARED IMPORTED GLOBAL)
      set_target_properties(ns3::lib${_dltrace_module} PROPERTIES
        IMPORTED_LOCATION "${_dltrace_lib}"
        INTERFACE_INCLUDE_DIRECTORIES "${tree}/build/include"
        INTERFACE_COMPILE_DEFINITIONS "${_dltrace_definitions}")
    endif()
    list(APPEND DLTRACE_NS3_TARGETS ns3::lib${_dltrace_module})
  endforeach()
  set(DLTRACE_NS3_TREE_LIB_DIR "${tree}/build/lib")
  set(DLTRACE_NS3_BUILD "ns-3 ${ns3_VERSION} tree at ${tree} (profile ${_dltrace_tree_profile}, ${_dltrace_log_words})")
  message(STATUS "dltrace: building the ns-3 module against the ${DLTRACE_NS3_BUILD}")
  # Installed programs find the tree's libraries too (the build tree's RUNPATH
  # already names them).
  list(APPEND CMAKE_INSTALL_RPATH "${DLTRACE_NS3_TREE_LIB_DIR}")
  set(CMAKE_INSTALL_RPATH "${CMAKE_INSTALL_RPATH}" PARENT_SCOPE)
endmacro()

# Makes target dltrace_ns3_tree_applications: ns-3's applications module of
# TREE, or, when the tree was built without it (scripts/ns3-contrib-build.sh
# builds only what the module needs), the few sources of it that
# dltrace-ns3-bench's plain program uses (BulkSendApplication, PacketSink and
# the headers they write), compiled from the tree with its own settings.
function(dltrace_ns3_tree_applications tree)
  file(GLOB _libs "${tree}/build/lib/libns3*-applications*.so")
  foreach(_lib ${_libs})
    get_filename_component(_name "${_lib}" NAME)
    if(_name MATCHES "^libns3(\\.[0-9]+|-dev)?-applications(-(debug|default|release|optimized|relwithdebinfo|minsizerel))?\\.so$")
      dltrace_import_ns3_tree("${tree}" "applications")
      add_library(dltrace_ns3_tree_applications INTERFACE)
      target_link_libraries(dltrace_ns3_tree_applications INTERFACE ns3::libapplications)
      return()
    endif()
  endforeach()
  set(_model "${tree}/src/applications/model")
  set(_include "${CMAKE_CURRENT_BINARY_DIR}/tree-applications/include")
  foreach(_name bulk-send-application packet-sink seq-ts-size-header seq-ts-header)
    if(NOT EXISTS "${_model}/${_name}.cc")
      message(FATAL_ERROR "dltrace: ${_model}/${_name}.cc is missing: the ns-3 tree ${tree} is incomplete")
    endif()
    configure_file("${_model}/${_name}.h" "${_include}/ns3/${_name}.h" COPYONLY)
    list(APPEND _sources "${_model}/${_name}.cc")
  endforeach()
  add_library(dltrace_ns3_tree_applications STATIC ${_sources})
  target_include_directories(dltrace_ns3_tree_applications SYSTEM PUBLIC "${_include}")
  target_link_libraries(dltrace_ns3_tree_applications PUBLIC ns3::libcore ns3::libnetwork ns3::libinternet)
  target_compile_options(dltrace_ns3_tree_applications PRIVATE -w)  # ns-3's code, ns-3's warnings
endfunction()
