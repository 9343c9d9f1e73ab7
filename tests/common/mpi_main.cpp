// GoogleTest main for MPI tests: every rank runs every test; only rank 0 prints
// progress, every rank prints its failures; the exit code is non-zero on every
// rank when any rank failed. Built twice: with REDIST_TEST_THREAD_MULTIPLE the
// tests need MPI_THREAD_MULTIPLE (the runtime's workers post sends themselves;
// test_threads executes plans from several threads); where MPI does not provide
// it, every test of the program is skipped and says why.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
// Ranks other than 0 print only their failed assertions, tagged with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
  }

 private:
  int rank_;
};

// Skips every test, with the reason, when MPI lacks the thread level they need.
class ThreadLevel : public ::testing::Environment {
 public:
  ThreadLevel(int provided, int needed) : provided_(provided), needed_(needed) {}
  void SetUp() override {
    if (provided_ < needed_)
      GTEST_SKIP() << "this MPI provides thread level " << provided_ << "; these tests need MPI_THREAD_MULTIPLE ("
                   << needed_ << ")";
  }

 private:
  int provided_, needed_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
#ifdef REDIST_TEST_THREAD_MULTIPLE
  const int needed = MPI_THREAD_MULTIPLE;
#else
  const int needed = MPI_THREAD_SINGLE;
#endif
  MPI_Init_thread(&argc, &argv, needed, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ThreadLevel(provided, needed));
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) fprintf(stderr, "rank %d: FAILED\n", rank);
  MPI_Finalize();
  return any;
}
