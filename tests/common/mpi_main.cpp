// GoogleTest main for MPI tests: every rank runs every test; only rank 0 prints
// progress, every rank prints its failures; the exit code is non-zero on every
// rank when any rank failed. Built twice: with REDIST_TEST_THREAD_MULTIPLE the
// tests need MPI_THREAD_MULTIPLE (the runtime's workers post sends themselves).
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
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
#ifdef REDIST_TEST_THREAD_MULTIPLE
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const bool threads_ok = provided >= MPI_THREAD_MULTIPLE;
#else
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  const bool threads_ok = true;
#endif
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  int failed = !threads_ok || RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) fprintf(stderr, "rank %d: FAILED\n", rank);
  MPI_Finalize();
  return any;
}
