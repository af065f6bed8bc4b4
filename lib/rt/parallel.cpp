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
//  4. The caller waits for the participants by spinning, then returns.
//  5. A spinning thread yields the core (sched_yield) when the thread it waits for, or that
//     waits for it, runs on the same core: each thread publishes the CPU it last ran on.
//     Linux sometimes leaves two of our threads on one core for the life of a process (both
//     are always runnable, so it sees nothing to move). Before, each region then lasted a
//     scheduler slice (~2 ms: a worker spun out its slice while the caller, runnable on the
//     same core, waited), so a 10 µs region ran 200x slower, and a model at half speed in some
//     processes and not in others. Yielding only then, not after any long spin: threads that
//     yielded freely were put on one core more often beside a busy process.
// Threads can be pinned to cores (setPinning), thread k to the k-th CPU the process may use.
// wmtune pins while it times (measure, its measurement workers, run --bench) unless told not
// to, which keeps our threads apart in the first place. benchmarks/bench_parallel.cpp under
// `taskset -c 0` times the shared-core case.
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WM_PAUSE() _mm_pause()
#else
#define WM_PAUSE() sched_yield()
#endif

namespace wm::rt {

namespace {

// Only libc and pthread below: exported kernel libraries compile this file into themselves and
// depend on nothing else (no libstdc++: no std::thread, mutex, vector, chrono, no function-local
// statics, which need __cxa_guard_acquire).

thread_local bool tInRegion = false;
thread_local int tThreads = 0; // wm_set_caller_threads: this thread's regions (0: the pool's)

/// Threads whose CPU is tracked (the caller and the first kTrackedCpus-1 workers).
constexpr int kTrackedCpus = 64;

int64_t nowMicros() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

/// A pthread mutex held for a scope.
class Lock {
public:
  explicit Lock(pthread_mutex_t& m) : m_(m) { pthread_mutex_lock(&m_); }
  ~Lock() { pthread_mutex_unlock(&m_); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

private:
  pthread_mutex_t& m_;
};

/// The CPUs the process may use, read once before any thread is pinned (afterwards the
/// calling thread's own mask is a single CPU).
struct AllowedCpus {
  int cpu[CPU_SETSIZE];
  int count = 0;
  void read() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpu[count++] = c;
  }
};

/// Pins a thread to the k-th allowed CPU; k < 0, or k past the allowed CPUs: lets it run on all
/// of them (wrapping would put two threads on one core for good: the case step 5 is about).
void pinTo(const AllowedCpus& cpus, pthread_t th, int k) {
  if (cpus.count == 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (k < 0 || k >= cpus.count)
    for (int i = 0; i < cpus.count; ++i) CPU_SET(cpus.cpu[i], &set);
  else
    CPU_SET(cpus.cpu[k], &set);
  pthread_setaffinity_np(th, sizeof set, &set);
}

class Pool;
struct WorkerStart {
  Pool* pool;
  int id;
  uint64_t seen;
};

class Pool {
public:
  static Pool& get();

  // (the generation word carries the thread count in 16 bits)
  void setThreads(int n) {
    wanted_.store(n < 1 ? 1 : n > 0xffff ? 0xffff : n, std::memory_order_relaxed);
  }
  int threads() const { return wanted_.load(std::memory_order_relaxed); }
  void setSpinMicros(int us) { spinUs_.store(us < 0 ? 0 : us, std::memory_order_relaxed); }
  int spinMicros() const { return spinUs_.load(std::memory_order_relaxed); }

  /// on: the calling thread to the first allowed CPU, worker k to the (k+1)-th; off: undoes
  /// that for the calling thread and the workers (threads the caller starts afterwards — an
  /// OpenMP runtime's — inherit its mask, so a one-CPU mask must not outlive the timing).
  void setPinning(bool on) {
    Lock region(regionMu_);
    if (!on && !pin_) return;
    pin_ = on;
    pinTo(cpus_, pthread_self(), on ? 0 : -1);
    for (int i = 0; i < nWorkers_; ++i) pinTo(cpus_, workers_[i], on ? i + 1 : -1);
  }
  bool pinning() {
    Lock region(regionMu_);
    return pin_;
  }

  void run(int64_t n, void (*fn)(int64_t, void*), void* closure) {
    int64_t want = tThreads > 0 ? tThreads : threads();
    int t = static_cast<int>(want < n ? want : n);
    if (t <= 1 || tInRegion) {
      for (int64_t i = 0; i < n; ++i) fn(i, closure);
      return;
    }
    Lock region(regionMu_); // one region at a time
    t = 1 + ensureWorkers(t - 1);
    if (t <= 1) { // no thread could be started: run it here
      for (int64_t i = 0; i < n; ++i) fn(i, closure);
      return;
    }
    fn_ = fn;
    closure_ = closure;
    n_ = n;
    remaining_.store(t - 1, std::memory_order_relaxed);
    noteCpu(0);
    seq_ += 1;
    // Publish: the generation word carries the thread count (seq_cst: ordered with the
    // sleepers_ load below and the workers' sleepers_ increment, so no wake-up is lost).
    gen_.store(seq_ << 16 | static_cast<uint64_t>(t));
    if (sleepers_.load() > 0) {
      Lock g(mu_);
      pthread_cond_broadcast(&cv_);
    }
    tInRegion = true;
    part(0, t);
    tInRegion = false;
    for (int spins = 0; remaining_.load(std::memory_order_acquire) != 0; ++spins) {
      WM_PAUSE();
      if ((spins & 255) == 255 && sharesCore(t)) sched_yield();
    }
  }

private:
  Pool() {
    cpus_.read(); // before anything is pinned
    for (auto& c : cpu_) c.store(-1, std::memory_order_relaxed);
    long hw = sysconf(_SC_NPROCESSORS_ONLN); // until the program says otherwise
    wanted_ = hw > 0 ? static_cast<int>(hw < 0xffff ? hw : 0xffff) : 1;
    if (const char* s = std::getenv("WM_SPIN_US")) spinUs_ = atoi(s) < 0 ? 0 : atoi(s);
  }
  // Never destroyed: workers sleep (or spin out their budget) until the process ends.

  /// Starts workers until k exist (or as many as the system allows); returns how many there are.
  int ensureWorkers(int k) {
    if (k > capacity_) {
      int cap = capacity_ ? capacity_ : 8;
      while (cap < k) cap *= 2;
      void* grown = std::realloc(workers_, sizeof(pthread_t) * static_cast<size_t>(cap));
      if (!grown) return nWorkers_;
      workers_ = static_cast<pthread_t*>(grown);
      capacity_ = cap;
    }
    while (nWorkers_ < k) {
      int id = nWorkers_ + 1;
      // The generation before the region being started: the new worker takes part in it.
      auto* start = static_cast<WorkerStart*>(std::malloc(sizeof(WorkerStart)));
      if (!start) break;
      *start = WorkerStart{this, id, gen_.load()};
      if (pthread_create(&workers_[nWorkers_], nullptr, &Pool::threadMain, start) != 0) {
        std::free(start);
        break;
      }
      ++nWorkers_;
      if (pin_) {
        pinTo(cpus_, pthread_self(), 0);
        pinTo(cpus_, workers_[nWorkers_ - 1], id);
      }
    }
    return nWorkers_ < k ? nWorkers_ : k;
  }

  /// Publishes the calling thread's CPU as thread `id`'s; returns it.
  int noteCpu(int id) {
    int c = sched_getcpu();
    if (id < kTrackedCpus) cpu_[id].store(c, std::memory_order_relaxed);
    return c;
  }

  /// Whether the caller runs on the core of one of the region's t-1 workers.
  bool sharesCore(int t) {
    int c = noteCpu(0);
    for (int k = 1; k < t && k < kTrackedCpus; ++k)
      if (cpu_[k].load(std::memory_order_relaxed) == c) return true;
    return false;
  }

  static void* threadMain(void* arg) {
    WorkerStart s = *static_cast<WorkerStart*>(arg);
    std::free(arg);
    s.pool->loop(s.id, s.seen);
    return nullptr;
  }

  void part(int k, int t) {
    int64_t begin = n_ * k / t, end = n_ * (k + 1) / t;
    for (int64_t i = begin; i < end; ++i) fn_(i, closure_);
  }

  void loop(int id, uint64_t seen) {
    while (true) {
      seen = waitForRegion(id, seen);
      int t = static_cast<int>(seen & 0xffff);
      if (id >= t) continue; // not needed in this region
      noteCpu(id);
      tInRegion = true;
      part(id, t);
      tInRegion = false;
      remaining_.fetch_sub(1, std::memory_order_release);
    }
  }

  /// The next generation word after `seen`: spin (yielding while on the caller's core), then
  /// sleep.
  uint64_t waitForRegion(int id, uint64_t seen) {
    int64_t t0 = nowMicros();
    int64_t budget = spinMicros();
    for (int spins = 0;; ++spins) {
      uint64_t g = gen_.load(std::memory_order_acquire);
      if (g != seen) return g;
      WM_PAUSE();
      if ((spins & 255) == 255) {
        if (nowMicros() - t0 > budget) break;
        if (noteCpu(id) == cpu_[0].load(std::memory_order_relaxed)) sched_yield();
      }
    }
    Lock lk(mu_);
    sleepers_.fetch_add(1);
    while (gen_.load() == seen) pthread_cond_wait(&cv_, &mu_);
    sleepers_.fetch_sub(1);
    return gen_.load();
  }

  AllowedCpus cpus_;
  pthread_mutex_t regionMu_ = PTHREAD_MUTEX_INITIALIZER, mu_ = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv_ = PTHREAD_COND_INITIALIZER;
  pthread_t* workers_ = nullptr;
  int nWorkers_ = 0, capacity_ = 0;
  std::atomic<int> wanted_{1};
  std::atomic<int> spinUs_{2000};
  std::atomic<int> sleepers_{0};
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> remaining_{0};
  std::atomic<int> cpu_[kTrackedCpus] = {}; // the CPU thread k last saw itself on (0: caller)
  uint64_t seq_ = 0;
  bool pin_ = false;
  // the region (written before gen_ is published, read by participants after)
  void (*fn_)(int64_t, void*) = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
};

// The pool lives in static storage, made on first use and never destroyed.
pthread_once_t gPoolOnce = PTHREAD_ONCE_INIT;
alignas(Pool) unsigned char gPoolStorage[sizeof(Pool)];
Pool* gPool = nullptr;

Pool& Pool::get() {
  pthread_once(&gPoolOnce, [] { gPool = new (gPoolStorage) Pool(); });
  return *gPool;
}

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
bool pinning() {
  return Pool::get().pinning();
}
void setSpinMicros(int us) {
  Pool::get().setSpinMicros(us);
}

} // namespace wm::rt

extern "C" {
void wm_parallel_for(int64_t n, void (*fn)(int64_t, void*), void* closure) {
  wm::rt::Pool::get().run(n, fn, closure);
}
void wm_set_num_threads(int n) {
  wm::rt::setNumThreads(n > 0 ? n : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}
void wm_set_caller_threads(int n) {
  wm::rt::tThreads = n > 0 ? n : 0;
}
}
