#pragma once

namespace CLI {
class App;
}

namespace dlock::cli {

struct Context;

// `dlock doctor [--ttl D] [--json]`: whether the backend, as configured,
// can keep dlock's guarantees (Backend::diagnose), one line per check with
// what to change. Exit 0 when every guarantee holds (warnings allowed), 78
// when one does not, 69 when the backend cannot be reached at all.
void setup_doctor(CLI::App &sub, Context &context);

} // namespace dlock::cli
