# Pick CUDA architectures before the CUDA language is enabled.
# Order of precedence: the user's CMAKE_CUDA_ARCHITECTURES, then the architecture of
# the GPUs visible at configure time (nvidia-smi), then Hopper (sm_90), which is what
# a machine without a GPU builds for.
if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
  return()
endif()
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
  message(STATUS "multigpu: building for the visible GPUs: ${_multigpu_archs}")
else()
  set(_multigpu_archs 90)
  message(STATUS "multigpu: no GPU visible at configure time: building for Hopper (sm_90); "
                 "set CMAKE_CUDA_ARCHITECTURES to choose others")
endif()
set(CMAKE_CUDA_ARCHITECTURES "${_multigpu_archs}" CACHE STRING "CUDA architectures to build for")
