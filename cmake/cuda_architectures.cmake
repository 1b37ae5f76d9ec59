# Pick CUDA architectures before the CUDA language is enabled. Two lists:
#
# MULTIGPU_CUDA_ARCHITECTURES: what the library and the doctor are built for, and what the
#   installed package gives consumers that choose none (cmake/multigpu-config.cmake.in). By
#   default every architecture the library supports, compute capability 8.0 and newer: code
#   for sm_80, and code plus PTX for sm_90, which the driver compiles for newer GPUs. A
#   package built on a login node without a GPU then runs on an A100 or an H100 alike.
#   The user's CMAKE_CUDA_ARCHITECTURES or CUDAARCHS replaces it.
#
# CMAKE_CUDA_ARCHITECTURES: what this project's tests, examples and benchmarks are built for.
#   The user's choice, else the GPUs visible at configure time (nvidia-smi), else Hopper
#   (sm_90): without a GPU they only compile, and one architecture keeps that fast.
get_property(_multigpu_archs_doc CACHE CMAKE_CUDA_ARCHITECTURES PROPERTY HELPSTRING)
if(_multigpu_archs_doc STREQUAL "CUDA architectures to build for")
  # Chosen by this file in an earlier configure (below), not by the user.
  set(_multigpu_package_archs "80-real;90")
elseif(DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(_multigpu_package_archs "${CMAKE_CUDA_ARCHITECTURES}")
elseif(DEFINED ENV{CUDAARCHS})
  set(_multigpu_package_archs "$ENV{CUDAARCHS}")
else()
  set(_multigpu_package_archs "80-real;90")
endif()
set(MULTIGPU_CUDA_ARCHITECTURES "${_multigpu_package_archs}" CACHE STRING
    "CUDA architectures of the library and the installed package (8.0 or newer)")
foreach(_arch IN LISTS MULTIGPU_CUDA_ARCHITECTURES)
  if(_arch MATCHES "^([0-9]+)" AND CMAKE_MATCH_1 LESS 80)
    message(FATAL_ERROR "multigpu needs compute capability 8.0 or newer, but MULTIGPU_CUDA_ARCHITECTURES "
                        "(or CMAKE_CUDA_ARCHITECTURES) names ${_arch}")
  endif()
endforeach()
# Where the tests' list comes from, for the one configure line below that names both lists.
if(_multigpu_archs_doc STREQUAL "CUDA architectures to build for")
  set(_multigpu_tests_from "${_MULTIGPU_TEST_ARCHITECTURES_FROM}")
elseif(DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(_multigpu_tests_from "set by CMAKE_CUDA_ARCHITECTURES")
elseif(DEFINED ENV{CUDAARCHS})
  set(_multigpu_tests_from "set by CUDAARCHS")
else()
  find_program(MULTIGPU_NVIDIA_SMI nvidia-smi)
  set(_multigpu_archs "")
  if(MULTIGPU_NVIDIA_SMI)
    execute_process(
      COMMAND "${MULTIGPU_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
      OUTPUT_VARIABLE _multigpu_caps RESULT_VARIABLE _multigpu_smi_result ERROR_QUIET
      OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_multigpu_smi_result EQUAL 0 AND _multigpu_caps)
      string(REPLACE "\n" ";" _multigpu_caps "${_multigpu_caps}")
      foreach(_cap IN LISTS _multigpu_caps)
        string(STRIP "${_cap}" _cap)
        string(REPLACE "." "" _cap "${_cap}")
        if(_cap MATCHES "^[0-9]+$")
          list(APPEND _multigpu_archs "${_cap}")
        endif()
      endforeach()
      list(REMOVE_DUPLICATES _multigpu_archs)
    endif()
  endif()
  if(_multigpu_archs)
    set(_multigpu_tests_from "the GPUs visible at configure time")
  else()
    set(_multigpu_archs 90)
    set(_multigpu_tests_from "no GPU visible at configure time: Hopper")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_multigpu_archs}" CACHE STRING "CUDA architectures to build for")
  set(_MULTIGPU_TEST_ARCHITECTURES_FROM "${_multigpu_tests_from}" CACHE INTERNAL "")
endif()
if(DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(_multigpu_tests_archs "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set(_multigpu_tests_archs "$ENV{CUDAARCHS}")
endif()
if(NOT _multigpu_tests_from)
  set(_multigpu_tests_from "chosen at the first configure")
endif()
message(STATUS "multigpu: CUDA architectures ${MULTIGPU_CUDA_ARCHITECTURES} for the library and the installed "
               "package, ${_multigpu_tests_archs} for the tests, examples and benchmarks (${_multigpu_tests_from}); "
               "MULTIGPU_CUDA_ARCHITECTURES and CMAKE_CUDA_ARCHITECTURES choose")
