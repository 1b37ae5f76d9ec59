// Must not compile (the CTest test algorithms_from_cpp, with the host compiler): including
// the algorithms from a .cpp file must stop at once with the one message that names the fix.
#include <multigpu/multigpu.hpp>

int main() { return 0; }
