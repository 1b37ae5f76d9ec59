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
# A version newer than the installed one is refused at configure time, with both versions named.
if(NOT DEFINED PROGRAMS AND DEFINED EXPECTED_VERSION)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${EXPECTED_VERSION}")
  math(EXPR next_minor "${CMAKE_MATCH_2} + 1")
  set(too_new "${CMAKE_MATCH_1}.${next_minor}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build-too-new" -G "${GENERATOR}"
                          "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}"
                          "-DMULTIGPU_WANTED_VERSION=${too_new}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE "." "\\." too_new_regex "${too_new}")
  string(REPLACE "." "\\." installed_regex "${EXPECTED_VERSION}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "find_package(multigpu ${too_new}) succeeded against the installed ${EXPECTED_VERSION}:\n${out}")
  elseif(NOT err MATCHES "multigpu" OR NOT err MATCHES "${too_new_regex}" OR NOT err MATCHES "${installed_regex}")
    message(FATAL_ERROR "find_package(multigpu ${too_new}) failed without naming both versions:\n${err}")
  endif()
  message(STATUS "find_package(multigpu ${too_new}) refused: the installed version is ${EXPECTED_VERSION}")
endif()
# The package's CUDA architectures travel with it: a consumer that chooses none gets them
# (never CMake's default, below 8.0), and one that asks for an older GPU is stopped at configure.
if(NOT DEFINED PROGRAMS AND DEFINED PACKAGE_ARCHITECTURES)
  string(REPLACE "|" ";" PACKAGE_ARCHITECTURES "${PACKAGE_ARCHITECTURES}")
  set(build "${WORK_DIR}/build-default-architectures")
  step(${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${prefix}"
       -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
  file(READ "${build}/compile_commands.json" commands)
  string(REGEX MATCH "[^\n]*consumer\\.cu[^\n]*" consumer_cuda_command "${commands}")
  if(NOT consumer_cuda_command)
    string(REGEX MATCH "\"command\": \"[^\n]*nvcc[^\n]*" consumer_cuda_command "${commands}")
  endif()
  foreach(arch IN LISTS PACKAGE_ARCHITECTURES)
    if(arch MATCHES "^([0-9]+)")
      set(wanted "compute_${CMAKE_MATCH_1}")
    else()
      set(wanted "${arch}")
    endif()
    if(NOT consumer_cuda_command MATCHES "${wanted}")
      message(FATAL_ERROR "a consumer that chose no CUDA architectures was not built for ${arch} "
                          "(the package's ${PACKAGE_ARCHITECTURES}):\n${consumer_cuda_command}")
    endif()
  endforeach()
  if(consumer_cuda_command MATCHES "(compute|sm)_[1-7][0-9][^0-9]")
    message(FATAL_ERROR "a consumer that chose no CUDA architectures got one below 8.0:\n${consumer_cuda_command}")
  endif()
  message(STATUS "a consumer with no architectures of its own builds for ${PACKAGE_ARCHITECTURES}")
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build-sm75" -G "${GENERATOR}"
                          "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_CUDA_ARCHITECTURES=75
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "8\\.0 or newer.*75")
    message(FATAL_ERROR "a consumer asking for sm_75 was not stopped with a message (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "a consumer asking for sm_75 is refused at configure time")
endif()
set(core_consumer OFF)
if(NOT DEFINED PROGRAMS)
  set(PROGRAMS consumer_cuda consumer_host)
  set(core_consumer ON)
endif()
foreach(runtime Shared Static)
  set(build "${WORK_DIR}/build-${runtime}")
  step(${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${build}" -G "${GENERATOR}"
       "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}"
       "-DCMAKE_CUDA_RUNTIME_LIBRARY=${runtime}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
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

# A host-only lambda handed to transform or reduce (consumer/mistake_*.cu, never built by
# `all`): the build fails, its first error names the user's file, the lambda's line and
# __device__, and the whole build output stays under 8 KB. nvcc gives that note only when no
# header on the way to the check is a system header, and imported targets give their headers
# as system headers: the package gives CUDA sources include/multigpu-cuda with -I.
if(core_consumer)
  set(build "${WORK_DIR}/build-Static")
  file(READ "${build}/compile_commands.json" commands)
  string(REGEX MATCH "[^\n]*consumer_host\\.cpp[^\n]*" host_command "${commands}")
  string(REGEX MATCH "[^\n]*consumer\\.cu[^\n]*" cuda_command "${commands}")
  string(FIND "${host_command}" "-isystem ${prefix}/include " host_system)
  string(FIND "${host_command}" "-I${prefix}/include" host_normal)
  string(FIND "${cuda_command}" "-I${prefix}/include/multigpu-cuda " cuda_normal)
  if(host_system EQUAL -1 OR NOT host_normal EQUAL -1)
    message(FATAL_ERROR "host sources must see the installed headers as system headers only:\n${host_command}")
  elseif(cuda_normal EQUAL -1)
    message(FATAL_ERROR "CUDA sources must see include/multigpu-cuda with -I:\n${cuda_command}")
  endif()
  foreach(mistake mistake_transform mistake_reduce)
    file(READ "${CONSUMER_SOURCE_DIR}/${mistake}.cu" source)
    string(FIND "${source}" "// the mistake" at)
    string(SUBSTRING "${source}" 0 ${at} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines line)
    math(EXPR line "${line} + 1")
    execute_process(COMMAND ${CMAKE_COMMAND} --build "${build}" --target ${mistake}
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    string(LENGTH "${out}" size)
    # The first error: from the first line with "error:" to the blank line after it.
    string(REGEX MATCH "[^\n]*error:[^\n]*\n([^\n]+\n)*" first_error "${out}")
    if(rc EQUAL 0)
      message(FATAL_ERROR "${mistake}.cu (a host-only lambda) compiled against the installed package")
    elseif(NOT first_error MATCHES "${mistake}\\.cu[:(]${line}[^0-9]|line ${line} of [^\n]*${mistake}\\.cu"
           OR NOT first_error MATCHES "__device__")
      message(FATAL_ERROR "the first error for ${mistake}.cu does not name line ${line} of it and __device__:\n"
                          "${first_error}\n(the whole output: ${size} bytes)")
    elseif(size GREATER_EQUAL 8192)
      message(FATAL_ERROR "${mistake}.cu gives ${size} bytes of output, 8 KB or more:\n${out}")
    endif()
    message(STATUS "${mistake}.cu: the first error names line ${line} and __device__; ${size} bytes in all")
  endforeach()
endif()
