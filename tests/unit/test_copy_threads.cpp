// Copy threads (src/exec/threads.hpp) where the process cannot start a thread.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "exec/threads.hpp"

namespace {

// for_parts with threads that cannot start: the parts not started run on the
// calling thread, every part once. Before, std::thread's system_error destroyed
// the threads already started while joinable: std::terminate (`redist run
// --copy-threads 1024` under `ulimit -v 4000000` aborted). The address space is
// capped a little above what the process maps, so that a few 8 MB thread stacks
// fit and the rest do not.
TEST(CopyThreads, PartsRunWhereNoThreadCanStart) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers' shadow memory lives in the address space this test caps";
#else
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  long pages = 0;
  std::ifstream("/proc/self/statm") >> pages;
  ASSERT_GT(pages, 0);
  const rlimit low{static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{64} << 20),
                   old.rlim_max};
  constexpr int kParts = 256;
  std::vector<std::atomic<int>> ran(kParts);
  std::mutex mu;
  std::set<std::thread::id> threads;
  bool threw = false;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &low), 0);
  try {
    redist::detail::for_parts(kParts, [&](int t) {
      ran[static_cast<size_t>(t)].fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
    });
  } catch (...) {
    threw = true;
  }
  ASSERT_EQ(setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_FALSE(threw);
  EXPECT_LT(threads.size(), static_cast<size_t>(kParts)) << "every thread started: the cap did not bite";
  for (int t = 0; t < kParts; ++t) EXPECT_EQ(ran[static_cast<size_t>(t)].load(), 1) << "part " << t;
#endif
}

}  // namespace
