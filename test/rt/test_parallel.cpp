// The thread pool of parallel loops (lib/rt): every iteration runs exactly once whatever the
// thread count (workers created mid-run included), nested regions run serially, and regions
// complete whether the workers are spinning or asleep.
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
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
