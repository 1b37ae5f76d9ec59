# Installs the built library into a scratch prefix, then configures and builds a consumer
# project against it with find_package(multigpu) twice, once with the shared CUDA runtime and
# once with the static one (the consumer chooses; the package forces neither), checks which
# runtime each program was linked with, and runs them.
foreach(var MULTIGPU_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR CUDA_ARCHITECTURES GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()

find_program(READELF readelf)
if(NOT READELF)
  message(FATAL_ERROR "run.cmake needs readelf (binutils) to check which CUDA runtime was linked")
endif()

step(${CMAKE_COMMAND} --install "${MULTIGPU_BUILD_DIR}" --prefix "${prefix}")
if(NOT DEFINED PROGRAMS)
  set(PROGRAMS consumer_cuda consumer_host)
endif()
foreach(runtime Shared Static)
  set(build "${WORK_DIR}/build-${runtime}")
  step(${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
       "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}"
       "-DCMAKE_CUDA_RUNTIME_LIBRARY=${runtime}")
  step(${CMAKE_COMMAND} --build "${build}")
  foreach(program ${PROGRAMS})
    # The shared runtime shows as a NEEDED libcudart.so; the static one is linked in.
    execute_process(COMMAND "${READELF}" -d "${build}/${program}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "readelf -d ${build}/${program} failed (${rc})")
    endif()
    if(dynamic MATCHES "NEEDED[^\n]*libcudart\\.so")
      set(linked Shared)
    else()
      set(linked Static)
    endif()
    if(NOT linked STREQUAL runtime)
      message(FATAL_ERROR "${program} asked for the ${runtime} CUDA runtime but was linked with the "
                          "${linked} one:\n${dynamic}")
    endif()
    step("${build}/${program}")
    message(STATUS "${program}: ${runtime} CUDA runtime, built and ran")
  endforeach()
endforeach()
message(STATUS "consumer project built and ran against the installed package with both runtimes")
