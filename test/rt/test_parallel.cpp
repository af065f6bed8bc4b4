// The thread pool of parallel loops (lib/rt): every iteration runs exactly once whatever the
// thread count (workers created mid-run included), nested regions run serially, and regions
// complete whether the workers are spinning or asleep, or share one core; pinning gives the
// caller one CPU and unpinning gives it back the CPUs it had.
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <catch2/catch.hpp>

#include <dirent.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int64_t n) : hits(static_cast<size_t>(n)) {}
};

void count(int64_t i, void* p) {
  static_cast<Counts*>(p)->hits[static_cast<size_t>(i)]++;
}

bool runsEachOnce(int64_t n) {
  Counts c(n);
  wm_parallel_for(n, count, &c);
  for (auto& h : c.hits)
    if (h.load() != 1) return false;
  return true;
}

struct Nested {
  std::atomic<int> inner{0};
};

void innerBody(int64_t, void* p) {
  static_cast<Nested*>(p)->inner++;
}
void outerBody(int64_t, void* p) {
  wm_parallel_for(3, innerBody, p);
}

} // namespace

TEST_CASE("every iteration runs exactly once at any thread count", "[rt]") {
  for (int threads : {1, 2, 3, 4, 2, 1, 4}) { // growing counts start workers mid-run
    wm::rt::setNumThreads(threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1000})
      for (int rep = 0; rep < 50; ++rep) {
        INFO("threads " << threads << ", n " << n);
        REQUIRE(runsEachOnce(n));
      }
  }
}

TEST_CASE("a region inside a region runs serially on its thread", "[rt]") {
  wm::rt::setNumThreads(2);
  Nested n;
  wm_parallel_for(4, outerBody, &n);
  CHECK(n.inner.load() == 12);
}

TEST_CASE("regions complete when the workers have gone to sleep", "[rt]") {
  wm::rt::setNumThreads(2);
  wm::rt::setSpinMicros(0); // sleep at once between regions
  for (int rep = 0; rep < 200; ++rep) {
    if (rep % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(runsEachOnce(17));
  }
  wm::rt::setSpinMicros(2000);
  wm::rt::setPinning(true);
  REQUIRE(runsEachOnce(100));
}

namespace {

/// The CPUs the calling thread may run on.
cpu_set_t ownMask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  return set;
}

/// Gives every thread of the process this mask (the pool's workers included).
void maskAllThreads(const cpu_set_t& set) {
  DIR* d = opendir("/proc/self/task");
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') sched_setaffinity(std::atoi(e->d_name), sizeof set, &set);
  closedir(d);
}

} // namespace

TEST_CASE("pinning gives the caller one CPU; unpinning gives back the ones it had", "[rt]") {
  wm::rt::setNumThreads(2);
  REQUIRE(runsEachOnce(10)); // the workers exist
  wm::rt::setPinning(false);
  cpu_set_t before = ownMask();
  wm::rt::setPinning(true);
  CHECK(wm::rt::pinning());
  cpu_set_t pinned = ownMask();
  CHECK(CPU_COUNT(&pinned) == 1);
  REQUIRE(runsEachOnce(100));
  wm::rt::setPinning(false);
  CHECK_FALSE(wm::rt::pinning());
  cpu_set_t after = ownMask();
  CHECK(CPU_EQUAL(&before, &after));
}

TEST_CASE("regions complete, each iteration once, when all threads share one core", "[rt]") {
  // What Linux sometimes does to two spinning threads: the pool must neither hang nor lose
  // iterations (and yields the core to the thread it waits for; bench_parallel times that).
  wm::rt::setPinning(false);
  wm::rt::setNumThreads(3);
  REQUIRE(runsEachOnce(10));
  cpu_set_t all = ownMask(), one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &all)) {
      CPU_SET(c, &one);
      break;
    }
  maskAllThreads(one);
  for (int rep = 0; rep < 300; ++rep) REQUIRE(runsEachOnce(5 + rep % 7));
  maskAllThreads(all);
}
