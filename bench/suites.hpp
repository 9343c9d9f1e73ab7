// The cases of each redist-bench suite (paper 000 sec. 8, paper 001 sec. 3.3),
// scaled to a small machine.
#pragma once

#include <string>
#include <vector>

namespace redist::bench {

struct Case {
  std::string suite, series, name;  // series: a line of the suite's plot
  double x = 0;                      // the plot's abscissa (a tile size, K, ...)
  std::string x_label;
  std::string src, dst, region;      // spec strings; region empty: the whole array
  bool alltoall = false;             // also time MPI_Alltoall of the same volume
  std::vector<std::string> strategies = {};  // the strategies to time; empty: every one and auto
};

// Suite names in the order `all` runs them.
const std::vector<std::string>& suite_names();
// The cases of `suite` ("all": every suite) for `ranks` ranks, sizes times
// `scale`. `smoke`: the first and last case of each suite only. Empty for an
// unknown suite.
std::vector<Case> make_suite(const std::string& suite, int ranks, double scale, bool smoke);

}  // namespace redist::bench
