// A team's dynamic base quota (issue 14, the BRIEF's formula):
//
//   quota = members x per_member x complexity x (1 + min(0.5 x std / mean, 0.3))
//
// where std and mean are of the team's tokens per hour over its last 24
// whole hours (UsageLedger::team_hourly_tokens; hours without usage count
// as 0). std is the population standard deviation (divided by the number
// of hours, not one less). A bursty team gets up to 30% more than its
// size and complexity alone give; a steady one gets exactly that. With no
// history (no hours, or a mean of 0: nothing used, e.g. after a restart,
// as the ledger is in memory) the burst factor is 1. The quota is in the
// unit of the limit it sets (per_member is that unit per member). Pure;
// not wired into the quota ledger yet.
#pragma once

#include <span>

namespace arbiter::quota {

struct DynamicQuotaInputs {
  double members = 0;      // team size, >= 0
  double per_member = 50;  // base quota per member, >= 0
  double complexity = 1;   // task complexity factor, >= 0
  std::span<const double> hourly_usage;  // tokens per hour, oldest first, each >= 0
};

// 1 + min(0.5 x std / mean, 0.3) of `hourly_usage`; 1 when it is empty or
// its mean is 0.
double burst_factor(std::span<const double> hourly_usage);

double dynamic_quota(const DynamicQuotaInputs& in);

}  // namespace arbiter::quota
