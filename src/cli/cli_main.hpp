#pragma once

namespace dlock {

// The whole command line program; returns the exit status of spec.md.
int cli_main(int argc, char **argv);

} // namespace dlock
