#pragma once

// CLI11, without the start-up cost of <iostream> (cli/streams.hpp).
#include "cli/streams.hpp"

#include <CLI/CLI.hpp>
