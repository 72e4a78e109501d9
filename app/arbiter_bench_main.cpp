// arbiter-bench: the field report's scenarios against baselines
// (docs/arbiter-bench.md).
#include "bench/cli.hpp"

int main(int argc, char** argv) { return arbiter::bench::run_cli(argc, argv); }
