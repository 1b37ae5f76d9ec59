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

expect(0 "Usage: multigpu-doctor \\[OPTIONS\\].*--devices LIST.*--size-mib N=256.*Exit status"
       "${DOCTOR}" --help)
expect(0 "Usage: multigpu-doctor" "${DOCTOR}" -h)
expect(2 "--devices: takes CUDA ordinals separated by commas.*got 'x'" "${DOCTOR}" --devices 0,x)
expect(2 "--devices: 1 required LIST missing" "${DOCTOR}" --devices=)
expect(2 "--devices: takes CUDA ordinals.*got '-1'" "${DOCTOR}" --devices -1)
expect(2 "argument was not expected: --frobnicate" "${DOCTOR}" --frobnicate)
expect(2 "argument was not expected: stray" "${DOCTOR}" stray)
expect(2 "--size-mib: takes a whole number of MiB from 1 to 65536; got '0'" "${DOCTOR}" --size-mib 0)
expect(2 "--size-mib: takes a whole number.*got '12x'" "${DOCTOR}" --size-mib=12x)
expect(2 "--repetitions: takes a whole number from 1 to 1000; got '1001'" "${DOCTOR}" --repetitions 1001)
expect(2 "--repetitions: 1 required N missing" "${DOCTOR}" --repetitions)
expect(2 "json was given a disallowed flag override" "${DOCTOR}" --json=yes)
# Machines get JSON even for bad arguments, wherever --json stands.
expect(2 "\"exit_status\": 2,[\n ]*\"error\": \"The following argument was not expected: --bogus" "${DOCTOR}" --bogus --json)
# CUDA_VISIBLE_DEVICES=-1 hides every GPU: the doctor cannot run, and says so.
expect(2 "no CUDA device is visible.*CUDA_VISIBLE_DEVICES \\(now '-1'\\)"
       "${CMAKE_COMMAND}" -E env CUDA_VISIBLE_DEVICES=-1 "${DOCTOR}")
expect(2 "\"error\": \"cannot run: no CUDA device is visible"
       "${CMAKE_COMMAND}" -E env CUDA_VISIBLE_DEVICES=-1 "${DOCTOR}" --json --devices 0,0)
