// The data of transform steps. Every step kind is listed once in WM_STEP_KINDS with its
// two-to-four-letter record tag (Ansor's); the Step variant, the tag table, printing, JSON and
// application (steps.h) are all generated from or checked against that list.
//
// How to add a step: docs/contributing.md ("A transform step") — the kind list here, apply,
// print and JSON in steps.cpp, lowering, tests, and the world model's feature layout.
#pragma once

#include <wm/ir/expr.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

namespace wm::sched {

#define WM_ANNOTATIONS(X)                                                                          \
  X(None, "none")                                                                                  \
  X(Unroll, "unroll")                                                                              \
  X(Vectorize, "vectorize")                                                                        \
  X(Parallel, "parallel")                                                                          \
  X(VThread, "vthread")                                                                            \
  X(BlockX, "blockIdx.x")                                                                          \
  X(BlockY, "blockIdx.y")                                                                          \
  X(BlockZ, "blockIdx.z")                                                                          \
  X(ThreadX, "threadIdx.x")                                                                        \
  X(ThreadY, "threadIdx.y")                                                                        \
  X(ThreadZ, "threadIdx.z")

enum class Annotation : uint8_t {
#define WM_X(n, s) n,
  WM_ANNOTATIONS(WM_X)
#undef WM_X
};
const char* annotationName(Annotation a);
bool parseAnnotation(const std::string& s, Annotation* out);
/// vthread, blockIdx.*, threadIdx.*
bool isThreadBinding(Annotation a);

#define WM_STEP_KINDS(X)                                                                           \
  X(Annotation, "AN")                                                                              \
  X(Fuse, "FU")                                                                                    \
  X(Pragma, "PR")                                                                                  \
  X(Reorder, "RE")                                                                                 \
  X(Split, "SP")                                                                                   \
  X(FollowSplit, "FSP")                                                                            \
  X(FollowFusedSplit, "FFSP")                                                                      \
  X(StorageAlign, "SA")                                                                            \
  X(ComputeAt, "CA")                                                                               \
  X(ComputeInline, "CI")                                                                           \
  X(ComputeRoot, "CR")                                                                             \
  X(CacheRead, "CHR")                                                                              \
  X(CacheWrite, "CHW")                                                                             \
  X(Rfactor, "RF")

/// Annotate loop `iter` of `stage`.
struct AnnotationStep {
  int stage = 0, iter = 0;
  Annotation annotation = Annotation::None;
  auto key() const { return std::tie(stage, iter, annotation); }
};
/// Fuse consecutive loops `iters` (leaf positions, ascending) into one.
struct FuseStep {
  int stage = 0;
  std::vector<int> iters;
  auto key() const { return std::tie(stage, iters); }
};
/// A pragma on a loop; today only "auto_unroll_max_step".
struct PragmaStep {
  int stage = 0, iter = 0;
  std::string key_;
  int64_t value = 0;
  auto key() const { return std::tie(stage, iter, key_, value); }
};
/// New loop order: order[k] is the old position of the loop that goes to position k.
struct ReorderStep {
  int stage = 0;
  std::vector<int> order;
  auto key() const { return std::tie(stage, order); }
};
/// Split loop `iter` into lengths.size()+1 loops. innerToOuter: lengths are the inner parts
/// (outermost gets the rest); else they are the outer parts. A length of 0 is unknown (sketch).
/// `extent` records the loop's extent when the step was made (informative).
struct SplitStep {
  int stage = 0, iter = 0;
  int64_t extent = 0;
  std::vector<int64_t> lengths;
  bool innerToOuter = true;
  auto key() const { return std::tie(stage, iter, extent, lengths, innerToOuter); }
};
/// Split like step srcStep (a Split): its first nSplit-1 lengths, then the product of the rest.
struct FollowSplitStep {
  int stage = 0, iter = 0, srcStep = 0, nSplit = 0;
  auto key() const { return std::tie(stage, iter, srcStep, nSplit); }
};
/// Split by the product of lengths[level] of several Split steps (factor, or nparts).
struct FollowFusedSplitStep {
  int stage = 0, iter = 0;
  std::vector<int> srcSteps;
  int level = 0;
  bool factorOrNparts = true;
  auto key() const { return std::tie(stage, iter, srcSteps, level, factorOrNparts); }
};
/// Pad the buffer stride of the op's spatial axis `iter` to k·factor + offset.
struct StorageAlignStep {
  int stage = 0, iter = 0;
  int64_t factor = 0, offset = 0;
  auto key() const { return std::tie(stage, iter, factor, offset); }
};
/// Compute `stage` inside loop `targetIter` of `targetStage` (its only consumer).
struct ComputeAtStep {
  int stage = 0, targetStage = 0, targetIter = 0;
  auto key() const { return std::tie(stage, targetStage, targetIter); }
};
struct ComputeInlineStep {
  int stage = 0;
  auto key() const { return std::tie(stage); }
};
struct ComputeRootStep {
  int stage = 0;
  auto key() const { return std::tie(stage); }
};
/// A copy of `stage` in `scope`, read by `readers` instead of it; inserted after it.
struct CacheReadStep {
  int stage = 0;
  ir::MemScope scope = ir::MemScope::Shared;
  std::vector<int> readers;
  auto key() const { return std::tie(stage, scope, readers); }
};
/// Compute `stage` into a `scope` buffer, then copy it out; the new stage goes before it.
struct CacheWriteStep {
  int stage = 0;
  ir::MemScope scope = ir::MemScope::Local;
  auto key() const { return std::tie(stage, scope); }
};
/// Make reduction loop `iter` a spatial axis (at position factorIter) of a new stage.
struct RfactorStep {
  int stage = 0, iter = 0, factorIter = 0;
  auto key() const { return std::tie(stage, iter, factorIter); }
};

#define WM_X(n, t)                                                                                 \
  inline bool operator==(const n##Step& a, const n##Step& b) {                                     \
    return a.key() == b.key();                                                                     \
  }
WM_STEP_KINDS(WM_X)
#undef WM_X

using Step = std::variant<
#define WM_X(n, t) n##Step,
    WM_STEP_KINDS(WM_X)
#undef WM_X
        std::monostate>;

/// The record tag ("SP", "CA", ...).
const char* stepTag(const Step& s);
/// The stage a step acts on.
int stepStage(const Step& s);

} // namespace wm::sched
