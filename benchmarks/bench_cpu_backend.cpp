// CPU backend benchmark: for GEMM 1024³ and a ResNet conv2d (N=1, C=64, 56×56, K=64, 3×3),
// the naive program, a hand-written schedule (benchmarks/schedules/*.json) and libtorch's own
// operator (torch::matmul / torch::conv2d), side by side in one process with the same thread
// count, with GFLOP/s and the fraction of this CPU's peak measured by an FMA loop.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/benchmarks/wm_bench_cpu [--threads N]
//
// (Unset both variables for benchmarks only; they halve OpenBLAS on this CPU.)
#include <wm/bench/fma_peak.h>
#include <wm/codegen/codegen.h>
#include <wm/frontend/workload.h>
#include <wm/ir/interpreter.h>
#include <wm/lower/lower.h>
#include <wm/rt/parallel.h>
#include <wm/runtime/buffer.h>
#include <wm/schedule/steps.h>

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

using namespace wm;
using Clock = std::chrono::steady_clock;

namespace {

// Median seconds of f over runs taking at least minS in total (and at least 3 runs).
template <typename F> double timeIt(F f, double minS = 0.5) {
  f(); // warm-up
  std::vector<double> t;
  double total = 0;
  while (t.size() < 3 || total < minS) {
    auto s = Clock::now();
    f();
    double d = std::chrono::duration<double>(Clock::now() - s).count();
    t.push_back(d);
    total += d;
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double peakGflops(int threads) {
  const int64_t iters = 10'000'000;
  const double flopsPerThread = bench::fmaFlopsPerIter() * iters;
  std::atomic<double> sink{0};
  auto s = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back([&] { sink = sink + bench::fmaLoop(iters); });
  for (auto& t : ts) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - s).count();
  return flopsPerThread * threads / secs * 1e-9;
}

std::vector<sched::Step> readSchedule(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<sched::Step> steps;
  std::string err;
  if (!sched::stepsFromJson(ss.str(), &steps, &err)) throw std::runtime_error(path + ": " + err);
  return steps;
}

struct Row {
  std::string what;
  double seconds;
};

// Times the schedule's kernel on the workload's random inputs; checks it against torch first.
double timeSchedule(const Workload& w, const std::vector<sched::Step>& steps,
                    const std::vector<ir::NDArray>& inputs, const torch::Tensor& expect,
                    double minS) {
  auto r = sched::replay(w.dag, steps);
  if (!r.error.empty()) throw std::runtime_error("schedule: " + r.error);
  auto f = lower::lower(r.state);
  auto k = codegen::JitKernel::compile(f, codegen::resolveTarget({}));
  std::vector<runtime::HostBuffer> bufs;
  for (auto& a : inputs) bufs.push_back(runtime::HostBuffer::from(a));
  for (auto& o : f.outputs) bufs.emplace_back(o->dtype, o->shape, o->allocElements());
  std::vector<void*> args;
  for (auto& b : bufs) args.push_back(b.data());
  k->call(args.data());
  auto out = torch::from_blob(bufs.back().data(), expect.sizes(), torch::kFloat32);
  double err = ((out - expect).abs() / expect.abs().clamp_min(1.0)).max().item<double>();
  if (err > 1e-3)
    throw std::runtime_error("wrong result, max relative error " + std::to_string(err));
  return timeIt([&] { k->call(args.data()); }, minS);
}

torch::Tensor toTorch(const ir::NDArray& a) {
  std::vector<int64_t> shape(a.shape().begin(), a.shape().end());
  return torch::from_blob(const_cast<double*>(a.data()), shape, torch::kFloat64)
      .to(torch::kFloat32)
      .contiguous();
}

} // namespace

int main(int argc, char** argv) {
  int threads = 2;
  std::string dir = WM_BENCH_DIR;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--schedules") && i + 1 < argc)
      dir = argv[++i];
    else {
      std::cerr << "usage: wm_bench_cpu [--threads N] [--schedules DIR]\n";
      return 2;
    }
  }
  torch::set_num_threads(threads);
  rt::setNumThreads(threads);
  double peak = 0;
  for (int i = 0; i < 3; ++i)
    peak = std::max(peak, peakGflops(threads)); // best of 3: the machine is shared
  std::cout << "threads " << threads << ", measured FMA peak " << std::fixed << std::setprecision(1)
            << peak << " GFLOP/s\n\n";
  std::cout << "| workload | program | ms | GFLOP/s | % of peak | vs libtorch "
               "|\n|---|---|---:|---:|---:|---:|\n";
  struct Case {
    std::string spec, schedule;
    std::function<torch::Tensor(const std::vector<torch::Tensor>&)> torchOp;
  };
  std::vector<Case> cases{
      {"gemm:M=1024,N=1024,K=1024", "gemm_1024_cpu.json",
       [](auto& in) { return torch::matmul(in[0], in[1]); }},
      {"conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1", "conv2d_resnet_cpu.json",
       [](auto& in) { return torch::conv2d(in[0], in[1], {}, 1, 1); }},
  };
  for (auto& c : cases) {
    auto w = parseWorkload(c.spec);
    auto inputs = ir::randomInputs(w.dag, 1);
    std::vector<torch::Tensor> tin;
    for (auto& a : inputs) tin.push_back(toTorch(a));
    torch::Tensor expect = c.torchOp(tin);
    double tTorch = timeIt([&] { c.torchOp(tin); });
    double tHand = timeSchedule(w, readSchedule(dir + "/" + c.schedule), inputs, expect, 0.5);
    double tNaive = timeSchedule(w, {}, inputs, expect, 0.0);
    double flops = static_cast<double>(w.dag.flops());
    for (auto [what, t] :
         std::vector<std::pair<std::string, double>>{{"naive (wmtune, no schedule)", tNaive},
                                                     {"hand schedule (wmtune)", tHand},
                                                     {"libtorch", tTorch}}) {
      double g = flops / t * 1e-9;
      std::cout << "| " << w.def->name << " | " << what << " | " << std::setprecision(3) << t * 1e3
                << " | " << std::setprecision(1) << g << " | " << 100 * g / peak << "% | "
                << std::setprecision(2) << tTorch / t << "× |\n";
    }
  }
  return 0;
}
