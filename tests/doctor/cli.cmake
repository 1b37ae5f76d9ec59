# multigpu-doctor's command line on any machine, GPU or not: bad arguments and a machine
# without a visible GPU exit with 2 and say why (JSON on stdout with --json); --help exits
# with 0. Run as: cmake -DDOCTOR=<path to multigpu-doctor> -P cli.cmake
if(NOT DEFINED DOCTOR)
  message(FATAL_ERROR "cli.cmake needs -DDOCTOR=<path to multigpu-doctor>")
endif()

set(failures 0)
# expect(<exit status> <regex that stdout+stderr must match> <arguments...>)
function(expect code pattern)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REPLACE ";" " " shown "${ARGN}")
  if(NOT rc STREQUAL "${code}")
    message(SEND_ERROR "`${shown}` exited with ${rc}, expected ${code}\nstdout:\n${out}\nstderr:\n${err}")
  elseif(NOT "${out}${err}" MATCHES "${pattern}")
    message(SEND_ERROR "`${shown}` did not print /${pattern}/\nstdout:\n${out}\nstderr:\n${err}")
  else()
    message(STATUS "ok: `${shown}` -> ${rc}")
  endif()
endfunction()

expect(0 "usage: multigpu-doctor" "${DOCTOR}" --help)
expect(2 "--devices takes CUDA ordinals separated by commas" "${DOCTOR}" --devices 0,x)
expect(2 "--devices takes CUDA ordinals" "${DOCTOR}" --devices=)
expect(2 "--devices takes CUDA ordinals" "${DOCTOR}" --devices -1)
expect(2 "unknown argument '--frobnicate'" "${DOCTOR}" --frobnicate)
expect(2 "--size-mib takes a whole number" "${DOCTOR}" --size-mib 0)
expect(2 "--repetitions needs a value" "${DOCTOR}" --repetitions)
expect(2 "--json takes no value" "${DOCTOR}" --json=yes)
# Machines get JSON even for bad arguments, wherever --json stands.
expect(2 "\"exit_status\": 2,[\n ]*\"error\": \"unknown argument" "${DOCTOR}" --bogus --json)
# CUDA_VISIBLE_DEVICES=-1 hides every GPU: the doctor cannot run, and says so.
expect(2 "no CUDA device is visible.*CUDA_VISIBLE_DEVICES \\(now '-1'\\)"
       "${CMAKE_COMMAND}" -E env CUDA_VISIBLE_DEVICES=-1 "${DOCTOR}")
expect(2 "\"error\": \"cannot run: no CUDA device is visible"
       "${CMAKE_COMMAND}" -E env CUDA_VISIBLE_DEVICES=-1 "${DOCTOR}" --json --devices 0,0)
