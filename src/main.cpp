#include "cli/cli_main.hpp"

int main(int argc, char **argv) { return dlock::cli_main(argc, argv); }
