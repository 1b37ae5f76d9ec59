#pragma once
// Test hooks of device_group construction and peer access, for the library's own tests: not
// part of the API that applications use, and not included by <multigpu/multigpu.hpp>. Defined
// only in the internal target multigpu_testing (MULTIGPU_TESTING).

#ifndef MULTIGPU_TESTING
#error "multigpu/testing/ is for the library's own tests: link the target multigpu_testing, which defines MULTIGPU_TESTING"
#endif

namespace multigpu::testing {

/// Test hook: make the data check of the peer link from `from` to `to` fail in groups
/// created afterwards, so that the pair is demoted to host staging.
void fail_peer_verification(int from, int to, bool fail = true);
/// Test hook: the next `count` device_group constructions throw std::runtime_error after
/// peer access was enabled and verified (where the slot worker threads would be made
/// next), so that tests can see the constructor give everything back. 0 turns it off.
void fail_group_constructions(int count);
/// How many live groups hold peer access from device `from` to device `to` (0 when none).
int peer_access_holders(int from, int to);

}  // namespace multigpu::testing
