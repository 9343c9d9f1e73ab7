// The rings' choice of stores for their slots (src/exec/fifo.hpp, SlotChoice),
// without MPI: one rank's executes simulated with a time per mode (its estimates
// are then the slowest rank's), against the schedule the header states (first
// execute untimed, four trials, the lower estimate, explorations at gaps from
// kExplore doubling to kExploreMax while the choice stands, decisions after the
// trials and each exploration only).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "exec/fifo.hpp"

using redist::detail::SlotChoice;

namespace {

// Runs executes [from, to) of `c`, each taking time(streamed, execute) seconds,
// deciding where the ranks would; returns the modes as a string, 's' streamed
// and 'o' ordinary stores.
std::string run(SlotChoice& c, std::int64_t from, std::int64_t to,
                const std::function<double(bool, std::int64_t)>& time) {
  std::string modes;
  for (std::int64_t n = from; n < to; ++n) {
    const bool s = c.mode(n);
    modes += s ? 's' : 'o';
    c.record(n, time(s, n));
    if (c.decides_after(n)) {
      const double slowest[2] = {c.estimate(false), c.estimate(true)};
      c.decide(n, slowest);
    }
  }
  return modes;
}

TEST(SlotChoice, TrialsThenTheFasterMode) {
  // Ordinary stores faster (this VM's fast level): after the untimed first execute
  // and the four trials, every execute takes them until the exploration.
  SlotChoice c;
  const auto fast_level = [](bool s, std::int64_t) { return s ? 5e-3 : 4e-3; };
  const std::string m = run(c, 0, SlotChoice::kExplore, fast_level);
  EXPECT_EQ(m.substr(0, 5), "sosos");
  EXPECT_EQ(m.substr(5), std::string(SlotChoice::kExplore - 5, 'o'));
  EXPECT_FALSE(c.streamed());
  EXPECT_DOUBLE_EQ(c.estimate(true), 5e-3);
  EXPECT_DOUBLE_EQ(c.estimate(false), 4e-3);

  // Streamed faster (the slow level: lines between the cores 3x slower).
  SlotChoice d;
  const auto slow_level = [](bool s, std::int64_t) { return s ? 25e-3 : 75e-3; };
  const std::string n = run(d, 0, 20, slow_level);
  EXPECT_EQ(n, "sosos" + std::string(15, 's'));
  EXPECT_TRUE(d.streamed());
}

TEST(SlotChoice, TrialsKeepTheLowerOfTwoTimes) {
  // A trial disturbed (another process on the core) does not decide: each mode's
  // estimate is the lower of its two trials.
  SlotChoice c;
  const std::vector<double> t = {1.0, 9e-3, 5e-3, 4e-3, 6e-3};  // execute 0 untimed; o, s, o, s
  run(c, 0, 5, [&](bool, std::int64_t n) { return t[static_cast<size_t>(n)]; });
  EXPECT_DOUBLE_EQ(c.estimate(false), 4e-3);
  EXPECT_DOUBLE_EQ(c.estimate(true), 5e-3);
  EXPECT_FALSE(c.streamed());
  // Not a time: ignored.
  c.record(5, 0);
  c.record(5, -1);
  EXPECT_DOUBLE_EQ(c.estimate(false), 4e-3);
}

TEST(SlotChoice, ExplorationFollowsAChangeOfLevel) {
  const std::int64_t E = SlotChoice::kExplore;
  // Fast level first (ordinary 4 ms, streamed 5 ms), then from execute 100 the
  // slow level (ordinary 12 ms, streamed 5 ms).
  const auto level = [](bool s, std::int64_t n) { return s ? 5e-3 : n < 100 ? 4e-3 : 12e-3; };
  SlotChoice c;
  const std::string m = run(c, 0, 4 * E + 1, level);
  const auto all = [](char x, std::int64_t n) { return std::string(static_cast<size_t>(n), x); };
  const auto at = [](std::int64_t n) { return static_cast<size_t>(n); };
  // The exploration at E streams once; ordinary stores stay chosen, the next
  // exploration 2E later.
  EXPECT_EQ(m.substr(at(5), at(E - 5)), all('o', E - 5));
  EXPECT_EQ(m[at(E)], 's');
  EXPECT_EQ(m.substr(at(E + 1), at(2 * E - 1)), all('o', 2 * E - 1));
  // From 100 ordinary stores take 12 ms: the exploration at 3E finds streamed
  // ones faster; the ranks stream from there on, exploring ordinary stores
  // again E later (the choice changed: the gap starts over).
  EXPECT_EQ(m[at(3 * E)], 's');
  EXPECT_EQ(m.substr(at(3 * E + 1), at(E - 1)), all('s', E - 1));
  EXPECT_EQ(m[at(4 * E)], 'o');
  EXPECT_TRUE(c.streamed());
  EXPECT_NEAR(c.estimate(false), 12e-3, 1e-9);  // the exploration's time
}

TEST(SlotChoice, ExplorationFindsTheOtherModeFaster) {
  // The slow level first (streamed 5 ms, ordinary 15 ms), from execute 100 the
  // fast one (ordinary 4 ms): streamed executes do not show it; the exploration
  // at 3 kExplore does, and the rank takes ordinary stores from there on (the
  // estimate of the slow level, 15 ms, is replaced, not averaged).
  const std::int64_t E = SlotChoice::kExplore;
  SlotChoice c;
  const std::string m = run(c, 0, 4 * E, [](bool s, std::int64_t n) { return s ? 5e-3 : n < 100 ? 15e-3 : 4e-3; });
  EXPECT_EQ(m.substr(5, static_cast<size_t>(3 * E - 5)),
            std::string(static_cast<size_t>(E - 5), 's') + 'o' + std::string(static_cast<size_t>(2 * E - 1), 's'));
  EXPECT_EQ(m.substr(static_cast<size_t>(3 * E)), std::string(static_cast<size_t>(E), 'o'));
  EXPECT_FALSE(c.streamed());
}

TEST(SlotChoice, ExplorationsThinOutWhileTheChoiceStands) {
  // One level all along (streamed 3x slower: each exploration costs an execute
  // 3x over): explorations at 64, then 128, 256, 512 and 1024 executes apart, no
  // further than kExploreMax.
  SlotChoice c;
  const std::string m = run(c, 0, 4100, [](bool s, std::int64_t) { return s ? 12e-3 : 4e-3; });
  std::vector<std::int64_t> streamed;
  for (size_t n = 0; n < m.size(); ++n)
    if (m[n] == 's') streamed.push_back(static_cast<std::int64_t>(n));
  EXPECT_EQ(streamed, (std::vector<std::int64_t>{0, 2, 4, 64, 192, 448, 960, 1984, 3008, 4032}));
  EXPECT_EQ(c.next_exploration(), 4032 + SlotChoice::kExploreMax);
}

TEST(SlotChoice, AnExplorationThatWasLuckyIsUndone) {
  // Ordinary stores faster (4 ms against 5), but the exploration of streamed
  // stores at kExplore ran 2 ms on every rank: the ranks stream until the next
  // exploration, kExplore later (the choice changed), whose ordinary stores (4
  // ms) beat the streamed executes' estimate (5 ms by then), and go back.
  const std::int64_t E = SlotChoice::kExplore;
  SlotChoice c;
  const std::string m =
      run(c, 0, 2 * E + 10, [&](bool s, std::int64_t n) { return s ? (n == E ? 2e-3 : 5e-3) : 4e-3; });
  EXPECT_EQ(m.substr(static_cast<size_t>(E), static_cast<size_t>(E)), std::string(static_cast<size_t>(E), 's'));
  EXPECT_EQ(m.substr(static_cast<size_t>(2 * E)), std::string(10, 'o'));
  EXPECT_FALSE(c.streamed());
}

TEST(SlotChoice, NoDecisionWithoutBothModesTimed) {
  // Ranks that time nothing (they send under 4 MB, or $REDIST_FIFO_STREAM forces
  // the mode) bring zeros: with no rank's estimate of a mode the choice stays.
  SlotChoice c;
  const double none[2] = {0, 0}, ordinary_only[2] = {4e-3, 0};
  c.decide(SlotChoice::kTrials, none);
  EXPECT_TRUE(c.streamed());
  c.decide(SlotChoice::kTrials, ordinary_only);
  EXPECT_TRUE(c.streamed());
  const double both[2] = {4e-3, 5e-3};
  c.decide(SlotChoice::kTrials, both);
  EXPECT_FALSE(c.streamed());
}

}  // namespace
