// Thread pool of generated kernels (see abi.h, parallel.h): persistent workers wait for a
// region; the iterations of a region are handed out in contiguous chunks through an atomic
// counter, and the calling thread takes part.
#include <wm/rt/abi.h>
#include <wm/rt/parallel.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace wm::rt {

namespace {

thread_local bool tInRegion = false;

class Pool {
public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }

  void setThreads(int n) {
    std::lock_guard<std::mutex> g(configMu_);
    wanted_ = n < 1 ? 1 : n;
  }
  int threads() const { return wanted_; }

  void run(int64_t n, void (*fn)(int64_t, void*), void* closure) {
    int t = wanted_;
    if (t <= 1 || n <= 1 || tInRegion) {
      for (int64_t i = 0; i < n; ++i) fn(i, closure);
      return;
    }
    std::lock_guard<std::mutex> region(regionMu_); // one region at a time
    ensureWorkers(t - 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      fn_ = fn;
      closure_ = closure;
      n_ = n;
      chunk_ = std::max<int64_t>(1, n / (static_cast<int64_t>(t) * 4));
      next_.store(0);
      active_ = t - 1;
      pending_ = t - 1;
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> lk(mu_);
    done_.wait(lk, [&] { return pending_ == 0; });
  }

private:
  Pool() {
    unsigned hw = std::thread::hardware_concurrency(); // until the program says otherwise
    wanted_ = hw ? static_cast<int>(hw) : 1;
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& th : workers_) th.join();
  }

  void ensureWorkers(int k) {
    while (static_cast<int>(workers_.size()) < k) {
      int id = static_cast<int>(workers_.size());
      workers_.emplace_back([this, id] { loop(id); });
    }
  }

  void loop(int id) {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (id >= active_) continue; // fewer threads wanted in this region
      }
      work();
      std::lock_guard<std::mutex> g(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  void work() {
    tInRegion = true;
    while (true) {
      int64_t begin = next_.fetch_add(chunk_);
      if (begin >= n_) break;
      int64_t end = std::min(n_, begin + chunk_);
      for (int64_t i = begin; i < end; ++i) fn_(i, closure_);
    }
    tInRegion = false;
  }

  std::mutex configMu_, regionMu_, mu_;
  std::condition_variable cv_, done_;
  std::vector<std::thread> workers_;
  int wanted_ = 1;
  bool stop_ = false;
  uint64_t generation_ = 0;
  int active_ = 0, pending_ = 0;
  void (*fn_)(int64_t, void*) = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
};

} // namespace

void setNumThreads(int n) {
  Pool::get().setThreads(n);
}
int numThreads() {
  return Pool::get().threads();
}

} // namespace wm::rt

extern "C" {
void wm_parallel_for(int64_t n, void (*fn)(int64_t, void*), void* closure) {
  wm::rt::Pool::get().run(n, fn, closure);
}
}
