// The target-neutral part of code generation: loop-nest IR -> LLVM IR for one function body.
// It emits expressions (scalar and explicit vectors), memory accesses, serial, unrolled and
// vectorized loops and conditionals; what differs between targets is behind hooks that a
// target's emitter implements (cpu/cpu_emitter.h; an NVPTX emitter joins the same way):
//   parallelLoop     a ForKind::Parallel loop (CPU: outlined and run by the thread pool)
//   threadBoundLoop  a ForKind::ThreadBound loop (GPU: blockIdx/threadIdx; CPU: an error)
//   allocateBuffer / freeBuffer   a temporary buffer (CPU: stack or wm_alloc)
//   barrier          a BarrierNode (GPU: __syncthreads; CPU: nothing)
//   mathCall         exp, log, ... where LLVM's intrinsics do not reach (GPU: no libm)
//
// Determinism: the environment (loop variables and buffers in scope) is kept in order of
// first binding, never in a pointer-keyed hash map, so the same loop nest gives the same IR.
//
// How to add a target: docs/contributing.md ("A target").
#pragma once

#include <wm/ir/simplify.h>
#include <wm/lower/lower.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace wm::codegen {

/// Explicit vectors are at most this many lanes (a wider vectorized loop is left to LLVM's
/// loop vectorizer).
constexpr int64_t kMaxVectorLanes = 64;
/// The largest lane stride (elements) a vector load reads as one span and a shuffle.
constexpr int64_t kMaxLoadStride = 4;

/// Values bound to IR nodes, in order of first binding (deterministic iteration).
template <typename K> class OrderedEnv {
public:
  llvm::Value* find(const K* k) const {
    for (auto it = items_.rbegin(); it != items_.rend(); ++it)
      if (it->first == k) return it->second;
    return nullptr;
  }
  void bind(const K* k, llvm::Value* v) {
    for (auto& kv : items_)
      if (kv.first == k) {
        kv.second = v;
        return;
      }
    items_.emplace_back(k, v);
  }
  void erase(const K* k) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->first == k) {
        items_.erase(it);
        return;
      }
  }
  const std::vector<std::pair<const K*, llvm::Value*>>& items() const { return items_; }

private:
  std::vector<std::pair<const K*, llvm::Value*>> items_;
};

class LoopEmitter {
public:
  LoopEmitter(llvm::LLVMContext& ctx, llvm::Module& m);
  virtual ~LoopEmitter() = default;
  LoopEmitter(const LoopEmitter&) = delete;
  LoopEmitter& operator=(const LoopEmitter&) = delete;

protected:
  struct Env {
    OrderedEnv<ir::VarNode> vars;
    OrderedEnv<ir::BufferNode> bufs;
  };

  // ---- the hooks of a target ----
  virtual void parallelLoop(const lower::ForNode* n) = 0;
  virtual void threadBoundLoop(const lower::ForNode* n) = 0;
  /// A pointer to `bytes` bytes for buf; *release set when freeBuffer must be called after
  /// the buffer's scope.
  virtual llvm::Value* allocateBuffer(const ir::Buffer& buf, int64_t bytes, bool* release) = 0;
  virtual void freeBuffer(llvm::Value* ptr) = 0;
  /// A block-wide barrier (GPU: llvm.nvvm.barrier0; CPU: nothing, one thread runs the nest).
  virtual void barrier() {}
  /// Whether an innermost serial loop that auto-unroll would unroll whole, whose stores are
  /// contiguous along it, is emitted as explicit vectors instead (CPU: yes; see
  /// unrolledAsVector in emitter.cpp).
  virtual bool vectorizeUnrolledLoops() const { return false; }
  /// A math function the target computes its own way (b: the second argument or null); null
  /// for LLVM's intrinsics and libm (CPU).
  virtual llvm::Value* mathCall(ir::MathFunc, llvm::Value*, llvm::Value*) { return nullptr; }

  /// Emits `body` into fn (whose entry block becomes the insertion and alloca point) with the
  /// given buffers bound; the caller terminates the function.
  void beginFunction(llvm::Function* fn);
  void stmt(const lower::Stmt& s);

  llvm::Type* typeOf(ir::DType t, bool memory = false);
  llvm::Value* expr(const ir::Expr& e) { return value(e, false); }

  llvm::LLVMContext& ctx_;
  llvm::Module& m_;
  llvm::IRBuilder<> b_;
  llvm::FastMathFlags fmf_;
  llvm::Function* fn_ = nullptr;
  llvm::BasicBlock* allocaPoint_ = nullptr;
  Env env_;

private:
  void allocate(const lower::AllocateNode* n);
  void forLoop(const lower::ForNode* n);
  llvm::Value* reductionUpdate(const lower::StoreNode* n);
  void serialLoop(const lower::ForNode* n);
  llvm::MDNode* loopMetadata(const lower::ForNode* n);

  llvm::Value* address(const ir::Buffer& buf, const std::vector<ir::Expr>& indices, bool clamp);
  llvm::Value* toI64(llvm::Value* v, ir::DType t);
  llvm::Value* splat(llvm::Value* v, bool vec);
  llvm::Value* value(const ir::Expr& e, bool vec);
  llvm::Value* scalarLoad(const ir::BufferLoadNode* n);
  llvm::Value* vectorLoad(const ir::BufferLoadNode* n);
  ir::Expr flatIndex(const ir::Buffer& buf, const std::vector<ir::Expr>& indices);
  std::optional<int64_t> laneCoefficient(const ir::Expr& e);
  template <typename F> void perLane(F f);
  template <typename F> void perLaneFirst(F f);
  llvm::Value* binaryOp(ir::BinaryOp op, bool fp, llvm::Value* a, llvm::Value* c);
  llvm::Value* floorDivMod(llvm::Value* a, llvm::Value* c, bool mod);
  llvm::Value* stridedLoad(const ir::BufferLoadNode* n, int64_t stride);
  llvm::Value* expF32(llvm::Value* x);
  llvm::Value* tanhF32(llvm::Value* x);
  llvm::Value* erfF32(llvm::Value* x);
  llvm::Value* horner(llvm::Value* x, std::initializer_list<double> coefficients);
  llvm::Value* castOp(ir::DType from, ir::DType to, llvm::Value* v, bool vec);
  llvm::Value* callOp(const ir::CallNode* n, bool vec);
  bool tryVectorLoop(const lower::ForNode* n);
  void vectorStores(const std::vector<const lower::StoreNode*>& stores);
  bool inBoundsLocal(const ir::Buffer& buf, const std::vector<ir::Expr>& indices);
  bool unrolledAsVector(const lower::ForNode* n);

  int speculative_ = 0;
  int64_t unrollBudget_ = 0;
  ir::VarBounds bounds_;        ///< the serial loops around (and the lane variable)
  llvm::Value* mask_ = nullptr; ///< the lanes a guarded vector loop runs (null: all)
  struct Lane {
    const ir::VarNode* var = nullptr;
    int64_t width = 0;
  } lane_;
};

/// Largest total trip count of the loop nest below s (1 for straight-line code).
int64_t nestSteps(const lower::Stmt& s);

} // namespace wm::codegen
