// The clock-rate shim (clock_rate nemesis): a process under it reads its
// monotonic clock, and waits by it, at the rate the control file names;
// other programs are left alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace {

/// NAME -> (monotonic ms, real ms) of each measurement the probe made.
std::map<std::string, std::pair<double, double>> probe(const std::string& rate, const std::string& exe) {
  const std::string ctl = "/tmp/baton-clock-rate-" + std::to_string(::getpid());
  std::ofstream(ctl) << rate << "\n";
  const std::string cmd = "BATON_CHAOS_CLOCK_CTL=" + ctl + " BATON_CHAOS_CLOCK_EXE=" + exe +
                          " LD_PRELOAD=" BATON_CHAOS_CLOCK " " BATON_CHAOS_CLOCK_PROBE;
  std::map<std::string, std::pair<double, double>> out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[256];
  while (std::fgets(line, sizeof line, p)) {
    std::istringstream in(line);
    std::string name;
    double mono = 0, real = 0;
    if (in >> name >> mono >> real) out[name] = {mono, real};
  }
  ::pclose(p);
  std::remove(ctl.c_str());
  std::remove((ctl + ".hits").c_str());
  return out;
}

void expect_rate(const std::map<std::string, std::pair<double, double>>& m, double rate) {
  for (const char* name : {"sleep_for", "busy", "cv_wait_for", "cv_wait_until", "asio_timer"}) {
    auto it = m.find(name);
    ASSERT_NE(it, m.end()) << name << " was not measured";
    const auto [mono, real] = it->second;
    ASSERT_GT(real, 0) << name;
    // Scheduling delay stretches both clocks alike; the ratio is the rate.
    EXPECT_NEAR(mono / real, rate, rate * 0.15) << name << ": mono " << mono << " ms, real " << real << " ms";
    if (std::string(name) != "busy") {
      EXPECT_GE(mono, 399) << name << " waited less than asked by its own clock";
    }
  }
}

}  // namespace

TEST(ClockRate, AFastProcessReadsAndWaitsByItsFastClock) { expect_rate(probe("2", "baton-chaos-clock-probe"), 2.0); }

TEST(ClockRate, ASlowProcessReadsAndWaitsByItsSlowClock) { expect_rate(probe("0.5", "baton-chaos-clock-probe"), 0.5); }

TEST(ClockRate, OtherProgramsKeepTheRealClock) { expect_rate(probe("2", "baton"), 1.0); }
