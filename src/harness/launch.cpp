#include "harness/launch.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "mpi/agree.hpp"

namespace redist::harness {

void agree_launch(MPI_Comm comm, int argc, char** argv) {
  std::string line;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    line += (i > 1 ? " " : "") + (a.find_first_of(" \t") == std::string::npos ? a : '"' + a + '"');
  }
  // The REDIST_* environment too (REDIST_STORAGE, REDIST_NODE_SIZE, the rings'
  // slot sizes: one rank's other value hung the job), REDIST_SHOW_ERRORS aside.
  std::vector<std::string> vars;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "REDIST_", 7) == 0 && std::strncmp(*e, "REDIST_SHOW_ERRORS=", 19) != 0) vars.emplace_back(*e);
  std::sort(vars.begin(), vars.end());
  std::string env;
  for (const std::string& v : vars) env += (env.empty() ? "" : " ") + v;
  detail::agree_same(comm, {{"the command line differs", line}, {"the REDIST_* environment differs", env}},
                     "every rank must get the same arguments and REDIST_* environment variables");
}

}  // namespace redist::harness
