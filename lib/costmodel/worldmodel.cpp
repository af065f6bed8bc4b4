// The world model (libtorch). See world_model.h for what it is; DESIGN.md §4 for why.
#include <torch/torch.h>
#undef CHECK

#include <wm/costmodel/world_model.h>
#include <wm/schedule/steps.h>
#include <wm/support/error.h>
#include <wm/support/files.h>
#include <wm/support/hash.h>
#include <wm/support/limits.h>
#include <wm/support/rng.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace wm::costmodel {

namespace {

// 2: the dynamics head (dyn) beside the ranking head
constexpr int64_t kFormatVersion = 2;
using torch::Tensor;
namespace nn = torch::nn;

struct NetImpl : nn::Module {
  NetImpl(int latent, int hidden, bool gru) : gru(gru) {
    stage1 = register_module("stage1", nn::Linear(kStageDim, hidden));
    stage2 = register_module("stage2", nn::Linear(hidden, latent));
    pool = register_module("pool", nn::Linear(2 * latent, latent));
    act1 = register_module("act1", nn::Linear(kActionDim + latent, hidden));
    act2 = register_module("act2", nn::Linear(hidden, latent));
    if (gru) {
      cell = register_module("cell", nn::GRUCell(latent, latent));
    } else {
      trans1 = register_module("trans1", nn::Linear(2 * latent, hidden));
      trans2 = register_module("trans2", nn::Linear(hidden, latent));
    }
    head1 = register_module("head1", nn::Linear(2 * latent + kHardwareDim + kLoopDim, hidden));
    head2 = register_module("head2", nn::Linear(hidden, hidden / 2));
    head3 = register_module("head3", nn::Linear(hidden / 2, 1));
    dyn = register_module("dyn", nn::Linear(latent, kLoopDim));
  }
  /// stage features [S, F] -> per-stage embeddings [S, L] and z0 [L]
  std::pair<Tensor, Tensor> encodeTask(const Tensor& sf) {
    Tensor h = stage2(torch::relu(stage1(sf)));
    Tensor z0 = torch::tanh(pool(torch::cat({h.mean(0), std::get<0>(h.max(0))})));
    return {h, z0};
  }
  Tensor encodeAction(const Tensor& af, const Tensor& stageEmb) {
    return act2(torch::relu(act1(torch::cat({af, stageEmb}, -1))));
  }
  Tensor transition(const Tensor& z, const Tensor& e) {
    if (gru) return cell(e, z);
    return z + trans2(torch::relu(trans1(torch::cat({z, e}, -1))));
  }
  /// The loop-state features a latent state stands for (the dynamics objective).
  Tensor predictLoops(const Tensor& z) { return dyn(z); }
  Tensor score(const Tensor& z, const Tensor& pooled, const Tensor& hw, const Tensor& loops) {
    Tensor x = torch::cat({z, pooled, hw, loops}, -1);
    return head3(torch::relu(head2(torch::relu(head1(x))))).squeeze(-1);
  }

  bool gru;
  nn::Linear stage1{nullptr}, stage2{nullptr}, pool{nullptr}, act1{nullptr}, act2{nullptr};
  nn::Linear trans1{nullptr}, trans2{nullptr}, head1{nullptr}, head2{nullptr}, head3{nullptr},
      dyn{nullptr};
  nn::GRUCell cell{nullptr};
};
TORCH_MODULE(Net);

struct TaskData {
  std::string key;
  std::vector<float> stages; // numStages * kStageDim
  int numStages = 0;
  double best = 0; // lowest valid cost seen
  std::vector<int> samples;
};

struct Sample {
  int task = 0;
  std::vector<float> actions; // len * kActionDim
  std::vector<int64_t> stageIdx;
  std::vector<float> loops; // kLoopDim: loopFeatures of the final state
  /// len * kLoopDim: loopFeatures of the state after each step (the dynamics targets; empty
  /// when the dynamics objective is off)
  std::vector<float> stepLoops;
  int len = 0;
  double cost = 0; // <= 0: failed
};

/// Hash of a step's kind and fields (the trie's key, with the parent node).
struct FieldHasher {
  StableHasher h;
  template <typename T> void operator()(const T& v) {
    if constexpr (std::is_enum_v<T>)
      h.addInt(static_cast<int64_t>(v));
    else if constexpr (std::is_integral_v<T>)
      h.addInt(static_cast<int64_t>(v));
    else if constexpr (std::is_same_v<T, std::string>)
      for (char c : v) h.addInt(c);
    else { // a vector
      h.addInt(static_cast<int64_t>(v.size()));
      for (auto& x : v) (*this)(x);
    }
  }
};
uint64_t hashStep(const sched::Step& s, int parent) {
  FieldHasher f;
  f.h.addInt(parent);
  f.h.addInt(static_cast<int64_t>(s.index()));
  std::visit(
      [&](const auto& st) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(st)>, std::monostate>)
          std::apply([&](const auto&... field) { (f(field), ...); }, st.key());
      },
      s);
  return f.h.value();
}

Tensor tensorOf(const std::vector<float>& v, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}

} // namespace

/// libtorch's messages run over many lines (a C++ backtrace): the first, at most 120 characters.
std::string firstLine(const std::string& what) {
  return what.substr(0, std::min(what.find('\n'), size_t(120)));
}

struct WorldModel::Impl {
  WorldModelOptions opts;
  HardwareFeatures hw;
  Net net{nullptr};
  std::unique_ptr<torch::optim::Adam> adam;
  std::vector<TaskData> tasks;
  std::unordered_map<std::string, int> taskIndex;
  std::vector<Sample> samples;
  Rng rng;
  Tensor hwTensor;

  Impl(const WorldModelOptions& o, const HardwareFeatures& h) : opts(o), hw(h), rng(o.seed) {
    torch::manual_seed(static_cast<uint64_t>(o.seed));
    torch::set_num_threads(std::max(1, o.threads));
    if (!o.init.empty())
      load(o.init);
    else
      net = Net(o.latent, o.hidden, o.transition == "gru");
    adam = std::make_unique<torch::optim::Adam>(
        net->parameters(), torch::optim::AdamOptions(o.lr).weight_decay(o.weightDecay));
    auto hv = hw.vector();
    hwTensor = tensorOf(hv, {1, kHardwareDim});
  }

  /// libtorch's archive reader trusts its input: a malformed file can crash it or make it
  /// allocate what the file only claims. So a child process reads the checkpoint first, under
  /// a memory limit and a deadline; only a file it read cleanly is read here.
  static void readsInAChild(const std::string& path, int64_t fileBytes, Impl* self) {
    std::fflush(nullptr);
    int msg[2];
    if (pipe(msg) != 0) return; // cannot isolate: read it here
    pid_t pid = fork();
    if (pid < 0) {
      close(msg[0]);
      close(msg[1]);
      return;
    }
    if (pid == 0) {
      close(msg[0]);
      limitAddressSpace(64 * fileBytes + (int64_t(256) << 20)); // fileBytes: a real file's size
      int fd = open("/dev/null", O_WRONLY);
      if (fd >= 0) dup2(fd, 2); // the child's messages are the parent's to give
      try {
        self->loadTrusted(path);
        std::_Exit(0);
      } catch (const UserError& e) { // the message goes to the parent, which gives it
        std::string m = e.what();
        ssize_t n = write(msg[1], m.data(), std::min(m.size(), size_t(4096)));
        (void)n;
        std::_Exit(2);
      } catch (...) {
        std::_Exit(4);
      }
    }
    close(msg[1]);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        WM_USER_ERROR() << path << ": not a world-model checkpoint (reading it did not finish)";
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = read(msg[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    close(msg[0]);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return; // it loads: read it here
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && !text.empty()) throw UserError(text);
    WM_USER_ERROR() << path << ": not a world-model checkpoint (libtorch could not read it"
                    << (WIFSIGNALED(status) ? ": it crashed the reader or ran out of memory" : "")
                    << ")";
  }

  void load(const std::string& path) {
    if (!requireRegularFile(path)) WM_USER_ERROR() << path << ": no such file";
    std::error_code ec;
    auto bytes = std::filesystem::file_size(path, ec);
    if (ec) WM_USER_ERROR() << path << ": cannot read (" << ec.message() << ")";
    readsInAChild(path, static_cast<int64_t>(bytes), this);
    loadTrusted(path);
  }

  void loadTrusted(const std::string& path) {
    torch::serialize::InputArchive ar;
    try {
      ar.load_from(path);
    } catch (const std::exception& e) {
      WM_USER_ERROR() << path << ": not a world-model checkpoint (" << firstLine(e.what()) << ")";
    }
    auto readInt = [&](const char* k) {
      Tensor t;
      if (!ar.try_read(k, t) || t.numel() != 1)
        WM_USER_ERROR() << path << ": not a world-model checkpoint (no " << k << ")";
      return t.item<int64_t>();
    };
    int64_t format = readInt("meta_format");
    if (format != kFormatVersion)
      WM_USER_ERROR() << path << ": checkpoint format " << format << ", this wmtune reads format "
                      << kFormatVersion;
    Tensor layout;
    if (!ar.try_read("meta_layout", layout) || layout.dim() != 1 || layout.numel() > 4096)
      WM_USER_ERROR() << path << ": not a world-model checkpoint (no meta_layout)";
    std::string l(static_cast<size_t>(layout.numel()), ' ');
    for (int64_t i = 0; i < layout.numel(); ++i)
      l[static_cast<size_t>(i)] = static_cast<char>(layout[i].item<int64_t>());
    if (l != kWorldModelLayout)
      WM_USER_ERROR() << path << ": checkpoint feature layout '" << l << "', this wmtune uses '"
                      << kWorldModelLayout << "' (retrain with `wmtune train`)";
    // Sizes are input: within the option table's ranges, and a network that fits in memory.
    int64_t latent = readInt("meta_latent"), hidden = readInt("meta_hidden");
    if (latent < 1 || latent > 4096 || hidden < 2 || hidden > 4096)
      WM_USER_ERROR() << path << ": checkpoint sizes latent " << latent << ", hidden " << hidden
                      << " are out of range (latent 1-4096, hidden 2-4096)";
    opts.latent = static_cast<int>(latent);
    opts.hidden = static_cast<int>(hidden);
    opts.transition = readInt("meta_gru") ? "gru" : "mlp";
    net = Net(opts.latent, opts.hidden, opts.transition == "gru");
    try {
      net->load(ar);
    } catch (const std::exception& e) {
      WM_USER_ERROR() << path << ": checkpoint weights do not fit (" << firstLine(e.what()) << ")";
    }
  }

  void save(const std::string& path) const {
    torch::serialize::OutputArchive ar;
    net->save(ar);
    ar.write("meta_format", torch::tensor(kFormatVersion));
    std::vector<int64_t> chars;
    for (const char* c = kWorldModelLayout; *c; ++c) chars.push_back(*c);
    ar.write("meta_layout", torch::tensor(chars));
    ar.write("meta_latent", torch::tensor(static_cast<int64_t>(opts.latent)));
    ar.write("meta_hidden", torch::tensor(static_cast<int64_t>(opts.hidden)));
    ar.write("meta_gru", torch::tensor(static_cast<int64_t>(opts.transition == "gru")));
    // Written whole (a temporary file renamed into place): a full disk or a kill never
    // replaces the previous checkpoint with a truncated one.
    std::ostringstream bytes;
    ar.save_to(bytes);
    writeFileAtomically(path, bytes.str());
  }

  int taskFor(const std::string& key, const ir::ComputeDAG& dag) {
    auto it = taskIndex.find(key);
    if (it != taskIndex.end()) return it->second;
    TaskData t;
    t.key = key;
    t.stages = stageFeatures(dag);
    t.numStages = static_cast<int>(dag.size());
    tasks.push_back(std::move(t));
    return taskIndex[key] = static_cast<int>(tasks.size() - 1);
  }

  void encodeSteps(const std::vector<sched::Step>& steps, int numStages, std::vector<float>* act,
                   std::vector<int64_t>* sidx) const {
    size_t n = std::min(steps.size(), static_cast<size_t>(opts.maxSteps));
    for (size_t i = 0; i < n; ++i) {
      auto f = actionFeatures(steps, i, numStages);
      act->insert(act->end(), f.begin(), f.end());
    }
    auto ops = initialOpOfSteps(steps, n, numStages);
    sidx->insert(sidx->end(), ops.begin(), ops.end());
  }

  /// loopFeatures after each of the first n steps into `out`, and of the final state into
  /// `last`; false when the steps do not replay
  bool stepLoopsOf(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps, size_t n,
                   std::vector<float>* out, std::vector<float>* last) {
    sched::State st(dag);
    for (size_t i = 0; i < steps.size(); ++i) {
      if (!sched::applyStep(st, steps[i]).empty()) return false;
      if (i < n) {
        auto f = loopFeatures(st, hw.cores);
        out->insert(out->end(), f.begin(), f.end());
      }
    }
    *last = loopFeatures(st, hw.cores);
    return true;
  }

  /// loopFeatures of the state the steps make (zeros when they do not replay)
  std::vector<float> loopsOf(const ir::ComputeDAG& dag, const std::vector<sched::Step>& steps) {
    std::vector<float> none, last;
    if (!stepLoopsOf(dag, steps, 0, &none, &last)) return std::vector<float>(kLoopDim, 0.f);
    return last;
  }

  /// A record's sample; the per-step loop states (dynamics targets) only `withSteps`.
  Sample sampleOf(const MeasuredRecord& r, bool withSteps) {
    Sample s;
    s.task = taskFor(r.taskKey, *r.dag);
    encodeSteps(r.steps, tasks[s.task].numStages, &s.actions, &s.stageIdx);
    s.len = static_cast<int>(s.stageIdx.size());
    if (!withSteps) {
      s.loops = loopsOf(*r.dag, r.steps);
    } else if (!stepLoopsOf(*r.dag, r.steps, static_cast<size_t>(s.len), &s.stepLoops, &s.loops)) {
      s.stepLoops.clear();
      s.loops.assign(kLoopDim, 0.f);
    }
    s.cost = std::isfinite(r.cost) && r.cost > 0 ? r.cost : 0;
    return s;
  }

  void add(const std::vector<MeasuredRecord>& records) {
    for (auto& r : records) {
      if (!r.dag) continue;
      Sample s = sampleOf(r, opts.dynamics > 0);
      int t = s.task;
      if (s.len == 0) continue;
      if (s.cost > 0 && (tasks[t].best <= 0 || s.cost < tasks[t].best)) tasks[t].best = s.cost;
      tasks[t].samples.push_back(static_cast<int>(samples.size()));
      samples.push_back(std::move(s));
    }
  }

  /// Scores a padded batch of samples (contiguous per task); differentiable. With `dynLoss`,
  /// also the dynamics objective: the mean squared error of the loop-state features predicted
  /// from each z_t against those of the state after step t.
  Tensor forward(const std::vector<const Sample*>& batch, Tensor* dynLoss = nullptr) {
    std::map<int, int64_t> offset; // task -> row offset into H
    std::vector<Tensor> hs, z0s;
    std::vector<int64_t> taskRow;
    for (auto* s : batch) {
      if (!offset.count(s->task)) {
        const TaskData& t = tasks[s->task];
        auto [h, z0] = net->encodeTask(tensorOf(t.stages, {t.numStages, kStageDim}));
        int64_t off = 0;
        for (auto& x : hs) off += x.size(0);
        offset[s->task] = off;
        hs.push_back(h);
        z0s.push_back(z0);
      }
    }
    // hs / z0s follow the tasks' first appearance in the batch
    std::vector<int> order;
    for (auto* s : batch)
      if (std::find(order.begin(), order.end(), s->task) == order.end()) order.push_back(s->task);
    Tensor H = torch::cat(hs, 0);
    Tensor Z0 = torch::stack(z0s, 0);
    int64_t N = static_cast<int64_t>(batch.size()), T = 0;
    for (auto* s : batch) T = std::max<int64_t>(T, s->len);
    std::vector<float> act(static_cast<size_t>(N * T * kActionDim), 0.f),
        mask(static_cast<size_t>(N * T), 0.f);
    std::vector<int64_t> sidx(static_cast<size_t>(N * T), 0), zrow(static_cast<size_t>(N));
    std::vector<float> loops, target, dmask;
    if (dynLoss) {
      target.assign(static_cast<size_t>(N * T * kLoopDim), 0.f);
      dmask.assign(static_cast<size_t>(N * T), 0.f);
    }
    for (int64_t i = 0; i < N; ++i) {
      const Sample& s = *batch[static_cast<size_t>(i)];
      loops.insert(loops.end(), s.loops.begin(), s.loops.end());
      if (dynLoss && s.stepLoops.size() == static_cast<size_t>(s.len * kLoopDim)) {
        std::copy(s.stepLoops.begin(), s.stepLoops.end(), target.begin() + i * T * kLoopDim);
        std::fill(dmask.begin() + i * T, dmask.begin() + i * T + s.len, 1.f);
      }
      std::copy(s.actions.begin(), s.actions.end(), act.begin() + i * T * kActionDim);
      for (int64_t t = 0; t < s.len; ++t) {
        mask[static_cast<size_t>(i * T + t)] = 1.f;
        sidx[static_cast<size_t>(i * T + t)] = offset[s.task] + s.stageIdx[static_cast<size_t>(t)];
      }
      zrow[static_cast<size_t>(i)] = std::find(order.begin(), order.end(), s.task) - order.begin();
    }
    Tensor A = tensorOf(act, {N, T, kActionDim});
    Tensor M = tensorOf(mask, {N, T, 1});
    Tensor S = torch::tensor(sidx, torch::kInt64);
    Tensor E = net->encodeAction(A, H.index_select(0, S).view({N, T, -1})) * M;
    Tensor z = Z0.index_select(0, torch::tensor(zrow, torch::kInt64));
    std::vector<Tensor> zs;
    for (int64_t t = 0; t < T; ++t) {
      Tensor m = M.select(1, t);
      z = m * net->transition(z, E.select(1, t)) + (1 - m) * z;
      if (dynLoss) zs.push_back(z);
    }
    if (dynLoss) {
      Tensor D = tensorOf(dmask, {N, T, 1});
      Tensor err =
          (net->predictLoops(torch::stack(zs, 1)) - tensorOf(target, {N, T, kLoopDim})).pow(2) * D;
      *dynLoss = err.sum() / (D.sum() * kLoopDim).clamp_min(1);
    }
    Tensor pooled = E.sum(1) / M.sum(1).clamp_min(1);
    return net->score(z, pooled, hwTensor.expand({N, kHardwareDim}),
                      tensorOf(loops, {N, kLoopDim}));
  }

  double trainSteps(int steps) {
    std::vector<int> usable;
    for (size_t t = 0; t < tasks.size(); ++t)
      if (tasks[t].samples.size() >= 2 && tasks[t].best > 0) usable.push_back(static_cast<int>(t));
    if (usable.empty()) return 0;
    net->train();
    std::vector<double> losses;
    for (int it = 0; it < steps; ++it) {
      std::vector<const Sample*> batch;
      std::vector<float> y;
      std::vector<int64_t> group;
      int nt = std::min<int>(opts.batchTasks, static_cast<int>(usable.size()));
      std::vector<int> chosen;
      while (static_cast<int>(chosen.size()) < nt) {
        int t =
            usable[static_cast<size_t>(rng.uniformInt(0, static_cast<int64_t>(usable.size()) - 1))];
        if (std::find(chosen.begin(), chosen.end(), t) == chosen.end()) chosen.push_back(t);
      }
      for (size_t g = 0; g < chosen.size(); ++g) {
        const TaskData& t = tasks[chosen[g]];
        size_t k = std::min<size_t>(static_cast<size_t>(opts.batchPerTask), t.samples.size());
        std::vector<int> pick = t.samples;
        for (size_t i = 0; i < k; ++i) // partial Fisher-Yates
          std::swap(pick[i], pick[i + static_cast<size_t>(rng.uniformInt(
                                          0, static_cast<int64_t>(pick.size() - i) - 1))]);
        for (size_t i = 0; i < k; ++i) {
          const Sample& s = samples[static_cast<size_t>(pick[i])];
          batch.push_back(&s);
          y.push_back(s.cost > 0 ? static_cast<float>(t.best / s.cost) : 0.f);
          group.push_back(static_cast<int64_t>(g));
        }
      }
      Tensor dyn;
      Tensor s = forward(batch, opts.dynamics > 0 ? &dyn : nullptr);
      Tensor Y = tensorOf(y, {static_cast<int64_t>(y.size())});
      Tensor G = torch::tensor(group, torch::kInt64);
      Tensor same = G.unsqueeze(1) == G.unsqueeze(0);
      Tensor dy = Y.unsqueeze(1) - Y.unsqueeze(0);
      Tensor w = torch::where(same & (dy > 1e-6), dy, torch::zeros_like(dy));
      Tensor ds = s.unsqueeze(1) - s.unsqueeze(0);
      Tensor rank = (w * torch::softplus(-ds)).sum() / w.sum().clamp_min(1e-9);
      Tensor loss = rank + opts.regression * torch::mse_loss(s, Y);
      if (opts.dynamics > 0) loss = loss + opts.dynamics * dyn;
      adam->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(net->parameters(), 1.0);
      adam->step();
      losses.push_back(loss.item<double>());
    }
    net->eval();
    size_t k = std::min<size_t>(10, losses.size());
    double sum = 0;
    for (size_t i = losses.size() - k; i < losses.size(); ++i) sum += losses[i];
    return sum / static_cast<double>(k);
  }

  /// Prefix-shared rollout of many step lists of one task (no gradients).
  /// `loops`: loopFeatures of each list's final state, kLoopDim each.
  std::vector<double> scoreSteps(const ir::ComputeDAG& dag,
                                 const std::vector<const std::vector<sched::Step>*>& lists,
                                 const std::vector<float>& loops) {
    torch::NoGradGuard ng;
    int numStages = static_cast<int>(dag.size());
    auto [H, z0] = net->encodeTask(tensorOf(stageFeatures(dag), {numStages, kStageDim}));
    // trie of the step sequences: node 0 is the root (the initial program). A node is keyed by
    // its parent and its step (hash, then equality); features are computed once per node.
    struct TrieNode {
      int parent;
      int depth;
      const sched::Step* step;
    };
    std::vector<TrieNode> nodes{{-1, 0, nullptr}};
    std::vector<std::vector<int>> byDepth;
    std::vector<float> feats;     // per node (from 1), kActionDim each
    std::vector<int64_t> stageOf; // per node (from 1)
    std::unordered_multimap<uint64_t, int> child;
    std::vector<int> leaf(lists.size(), 0);
    for (size_t c = 0; c < lists.size(); ++c) {
      const auto& steps = *lists[c];
      size_t n = std::min(steps.size(), static_cast<size_t>(opts.maxSteps));
      // a node's prefix is the same in every list that reaches it, so is its op
      auto ops = initialOpOfSteps(steps, n, numStages);
      int cur = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t key = hashStep(steps[i], cur);
        int found = -1;
        for (auto [it, end] = child.equal_range(key); it != end; ++it) {
          const TrieNode& t = nodes[static_cast<size_t>(it->second)];
          if (t.parent == cur && *t.step == steps[i]) {
            found = it->second;
            break;
          }
        }
        if (found < 0) {
          found = static_cast<int>(nodes.size());
          int depth = nodes[static_cast<size_t>(cur)].depth + 1;
          nodes.push_back({cur, depth, &steps[i]});
          if (static_cast<int>(byDepth.size()) < depth) byDepth.resize(static_cast<size_t>(depth));
          byDepth[static_cast<size_t>(depth - 1)].push_back(found);
          auto f = actionFeatures(steps, i, numStages);
          feats.insert(feats.end(), f.begin(), f.end());
          stageOf.push_back(ops[i]);
          child.emplace(key, found);
        }
        cur = found;
      }
      leaf[c] = cur;
    }
    int64_t total = static_cast<int64_t>(nodes.size());
    Tensor Z = torch::zeros({total, opts.latent});
    Tensor Esum = torch::zeros({total, opts.latent});
    Z[0] = z0;
    Tensor F = tensorOf(feats, {total - 1, kActionDim});
    Tensor SO = torch::tensor(stageOf, torch::kInt64);
    for (auto& level : byDepth) {
      std::vector<int64_t> ids(level.begin(), level.end()), parents, rows;
      for (int id : level) {
        parents.push_back(nodes[static_cast<size_t>(id)].parent);
        rows.push_back(id - 1);
      }
      Tensor idT = torch::tensor(ids, torch::kInt64), pT = torch::tensor(parents, torch::kInt64);
      Tensor rT = torch::tensor(rows, torch::kInt64);
      Tensor e =
          net->encodeAction(F.index_select(0, rT), H.index_select(0, SO.index_select(0, rT)));
      Tensor zn = net->transition(Z.index_select(0, pT), e);
      Z.index_copy_(0, idT, zn);
      Esum.index_copy_(0, idT, Esum.index_select(0, pT) + e);
    }
    std::vector<int64_t> leaves(leaf.begin(), leaf.end()), depth;
    for (int l : leaf) depth.push_back(std::max(1, nodes[static_cast<size_t>(l)].depth));
    Tensor L = torch::tensor(leaves, torch::kInt64);
    Tensor D = torch::tensor(depth, torch::kFloat32).unsqueeze(1);
    int64_t n = static_cast<int64_t>(leaves.size());
    Tensor s = net->score(Z.index_select(0, L), Esum.index_select(0, L) / D,
                          hwTensor.expand({n, kHardwareDim}), tensorOf(loops, {n, kLoopDim}));
    s = s.contiguous();
    return std::vector<double>(s.data_ptr<float>(), s.data_ptr<float>() + n);
  }
};

WorldModel::WorldModel(const WorldModelOptions& opts, const HardwareFeatures& hw)
    : impl_(std::make_unique<Impl>(opts, hw)) {}
WorldModel::~WorldModel() = default;

double WorldModel::dynamicsError(const std::vector<MeasuredRecord>& records) {
  torch::NoGradGuard ng;
  std::vector<Sample> tmp;
  for (auto& r : records)
    if (r.dag) {
      Sample s = impl_->sampleOf(r, true);
      if (s.len > 0 && !s.stepLoops.empty()) tmp.push_back(std::move(s));
    }
  if (tmp.empty()) return 0;
  std::vector<const Sample*> batch;
  for (auto& s : tmp) batch.push_back(&s);
  Tensor err;
  impl_->forward(batch, &err);
  return err.item<double>();
}

void WorldModel::addSamples(const std::vector<MeasuredRecord>& records) {
  impl_->add(records);
}
double WorldModel::train(int steps) {
  return impl_->trainSteps(steps);
}
int WorldModel::numSamples() const {
  return static_cast<int>(impl_->samples.size());
}
int WorldModel::numTasks() const {
  return static_cast<int>(impl_->tasks.size());
}
void WorldModel::save(const std::string& path) const {
  impl_->save(path);
}

void WorldModel::update(const std::vector<MeasuredRecord>& records) {
  impl_->add(records);
  impl_->trainSteps(impl_->opts.stepsPerUpdate);
}

std::vector<double> WorldModel::score(const ir::ComputeDAG& dag,
                                      const std::vector<std::vector<sched::Step>>& steps) {
  std::vector<const std::vector<sched::Step>*> lists;
  std::vector<float> loops;
  for (auto& s : steps) {
    lists.push_back(&s);
    auto l = impl_->loopsOf(dag, s);
    loops.insert(loops.end(), l.begin(), l.end());
  }
  if (lists.empty()) return {};
  return impl_->scoreSteps(dag, lists, loops);
}

std::vector<double> WorldModel::predict(const std::string&,
                                        const std::vector<sched::State>& states) {
  if (states.empty()) return {};
  std::vector<const std::vector<sched::Step>*> lists;
  std::vector<float> loops;
  for (auto& s : states) {
    lists.push_back(&s.steps());
    auto l = loopFeatures(s, impl_->hw.cores);
    loops.insert(loops.end(), l.begin(), l.end());
  }
  return impl_->scoreSteps(states[0].dag(), lists, loops);
}

} // namespace wm::costmodel
