// arbiter-bench's command line (docs/arbiter-bench.md):
//   arbiter-bench virtual --scenario F --out DIR [--seed N] [--policies a,b,...] [--jobs N]
//   arbiter-bench live --scenario F --target URL --out DIR [--seed N] [--label NAME] ...
//   arbiter-bench gateway-config --scenario F --out FILE [--sim | --engines-url URL,...]
//   arbiter-bench check DIR
// Exit status: 0 ok, 1 a run or check failed, 2 bad usage or scenario.
#pragma once

namespace arbiter::bench {

int run_cli(int argc, char** argv);

}  // namespace arbiter::bench
