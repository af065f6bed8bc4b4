// The thread pool of parallel loops (see abi.h, parallel.h). Roadmap:
//  1. A region is published with one atomic store: a generation word that also carries how many
//     threads take part, after the region's function, closure and size are written.
//  2. Workers spin on the generation word (with `pause`) for a bounded time after their last
//     region — as OpenMP runtimes do — so back-to-back regions (the repeats of a timed kernel,
//     the kernels of a model) start in well under a microsecond of the caller's publication;
//     only after the spin budget do they sleep on a condition variable, and the caller wakes
//     sleepers (no wake-up can be lost: both sides check under the mutex).
//  3. Static partitioning: thread k of t runs iterations [k·n/t, (k+1)·n/t), the caller being
//     thread 0. No thread can take another's share, so a late worker cannot leave the caller
//     running the whole loop alone (the old dynamic chunking did, whenever a wake-up took a
//     scheduler tick), and every thread gets work.
//  4. The caller waits for the participants by spinning (yielding after a while, in case a
//     participant shares its core), then returns.
// Threads can be pinned to cores (setPinning), thread k to the k-th CPU the process may use.
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WM_PAUSE() _mm_pause()
#else
#define WM_PAUSE() std::this_thread::yield()
#endif

namespace wm::rt {

namespace {

using Clock = std::chrono::steady_clock;

thread_local bool tInRegion = false;

/// The CPUs the process may use, read once before any thread is pinned (afterwards the
/// calling thread's own mask is a single CPU).
const std::vector<int>& allowedCpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> v;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) v.push_back(c);
    return v;
  }();
  return cpus;
}

/// Pins a thread to the k-th allowed CPU (wrapping).
void pinTo(pthread_t th, int k) {
  const auto& cpus = allowedCpus();
  if (cpus.empty()) return;
  int cpu = cpus[static_cast<size_t>(k) % cpus.size()];
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_setaffinity_np(th, sizeof one, &one);
}

class Pool {
public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }

  // (the generation word carries the thread count in 16 bits)
  void setThreads(int n) { wanted_.store(std::clamp(n, 1, 0xffff), std::memory_order_relaxed); }
  int threads() const { return wanted_.load(std::memory_order_relaxed); }
  void setSpinMicros(int us) { spinUs_.store(std::max(0, us), std::memory_order_relaxed); }
  int spinMicros() const { return spinUs_.load(std::memory_order_relaxed); }

  void setPinning(bool on) {
    std::lock_guard<std::mutex> region(regionMu_);
    pin_ = on;
    if (!on) return;
    pinTo(pthread_self(), 0);
    for (size_t i = 0; i < workers_.size(); ++i)
      pinTo(workers_[i].native_handle(), static_cast<int>(i) + 1);
  }

  void run(int64_t n, void (*fn)(int64_t, void*), void* closure) {
    int t = static_cast<int>(std::min<int64_t>(threads(), n));
    if (t <= 1 || tInRegion) {
      for (int64_t i = 0; i < n; ++i) fn(i, closure);
      return;
    }
    std::lock_guard<std::mutex> region(regionMu_); // one region at a time
    ensureWorkers(t - 1);
    fn_ = fn;
    closure_ = closure;
    n_ = n;
    remaining_.store(t - 1, std::memory_order_relaxed);
    seq_ += 1;
    // Publish: the generation word carries the thread count (seq_cst: ordered with the
    // sleepers_ load below and the workers' sleepers_ increment, so no wake-up is lost).
    gen_.store(seq_ << 16 | static_cast<uint64_t>(t));
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> g(mu_);
      cv_.notify_all();
    }
    tInRegion = true;
    part(0, t);
    tInRegion = false;
    auto t0 = Clock::now();
    for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
      WM_PAUSE();
      if ((spins & 1023) == 1023 && Clock::now() - t0 > std::chrono::microseconds(200))
        std::this_thread::yield();
    }
  }

private:
  Pool() {
    allowedCpus();                                     // before anything is pinned
    unsigned hw = std::thread::hardware_concurrency(); // until the program says otherwise
    wanted_ = hw ? static_cast<int>(hw) : 1;
    if (const char* s = std::getenv("WM_SPIN_US")) spinUs_ = std::max(0, std::atoi(s));
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (auto& th : workers_) th.join();
  }

  void ensureWorkers(int k) {
    while (static_cast<int>(workers_.size()) < k) {
      int id = static_cast<int>(workers_.size()) + 1;
      // The generation before the region being started: the new worker takes part in it.
      uint64_t start = gen_.load();
      workers_.emplace_back([this, id, start] { loop(id, start); });
      if (pin_) {
        pinTo(pthread_self(), 0);
        pinTo(workers_.back().native_handle(), id);
      }
    }
  }

  void part(int k, int t) {
    int64_t begin = n_ * k / t, end = n_ * (k + 1) / t;
    for (int64_t i = begin; i < end; ++i) fn_(i, closure_);
  }

  void loop(int id, uint64_t seen) {
    while (true) {
      uint64_t g = waitForRegion(seen);
      if (g == 0) return; // stopped
      seen = g;
      int t = static_cast<int>(g & 0xffff);
      if (id >= t) continue; // not needed in this region
      tInRegion = true;
      part(id, t);
      tInRegion = false;
      remaining_.fetch_sub(1, std::memory_order_release);
    }
  }

  /// The next generation word after `seen` (0 when the pool stops): spin, then sleep.
  uint64_t waitForRegion(uint64_t seen) {
    auto t0 = Clock::now();
    auto budget = std::chrono::microseconds(spinMicros());
    for (int spins = 0;; ++spins) {
      uint64_t g = gen_.load(std::memory_order_acquire);
      if (g != seen) return g;
      if (stop_.load(std::memory_order_relaxed)) return 0;
      WM_PAUSE();
      if ((spins & 255) == 255 && Clock::now() - t0 > budget) break;
    }
    std::unique_lock<std::mutex> lk(mu_);
    sleepers_.fetch_add(1);
    cv_.wait(lk, [&] { return gen_.load() != seen || stop_.load(); });
    sleepers_.fetch_sub(1);
    return stop_.load() ? 0 : gen_.load();
  }

  std::mutex regionMu_, mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<int> wanted_{1};
  std::atomic<int> spinUs_{2000};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> remaining_{0};
  uint64_t seq_ = 0;
  bool pin_ = false;
  // the region (written before gen_ is published, read by participants after)
  void (*fn_)(int64_t, void*) = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
};

} // namespace

void setNumThreads(int n) {
  Pool::get().setThreads(n);
}
int numThreads() {
  return Pool::get().threads();
}
void setPinning(bool on) {
  Pool::get().setPinning(on);
}
void setSpinMicros(int us) {
  Pool::get().setSpinMicros(us);
}

} // namespace wm::rt

extern "C" {
void wm_parallel_for(int64_t n, void (*fn)(int64_t, void*), void* closure) {
  wm::rt::Pool::get().run(n, fn, closure);
}
}
