// The umbrella header: everything a user of the library needs.
//
//   #include <redist/redist.hpp>
//   redist::Plan plan = redist::make_plan(src_layout, dst_layout, region, MPI_COMM_WORLD);
//   plan.execute(src_buffer, dst_buffer);
//
// Layers (docs/architecture.md): geometry <- layout <- plan <- cost <- exec.
#pragma once

#include "redist/cost.hpp"      // Machine, calibrate, Eq. 3 and Eq. 5
#include "redist/error.hpp"     // redist::Error
#include "redist/exec.hpp"      // Options, Plan, make_plan, strategies
#include "redist/geometry.hpp"  // Coord, Box
#include "redist/layout.hpp"    // Layout, spec strings, LocalIndex
#include "redist/plan.hpp"      // Region, RankPlan, PlanStats, plan_rank
