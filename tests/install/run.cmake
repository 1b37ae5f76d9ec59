# Installs the built library into a scratch prefix, then configures and builds a consumer
# project against it with find_package(multigpu), and runs the consumer.
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

step(${CMAKE_COMMAND} --install "${MULTIGPU_BUILD_DIR}" --prefix "${prefix}")
step(${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}")
step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
if(NOT DEFINED PROGRAMS)
  set(PROGRAMS consumer_cuda consumer_host)
endif()
foreach(program ${PROGRAMS})
  step("${WORK_DIR}/build/${program}")
endforeach()
message(STATUS "consumer project built and ran against the installed package")
