// Operator family: matrix products (matmul, dense, batch_matmul).
#include <wm/frontend/ops.h>
#include <wm/support/error.h>

namespace wm::ops {

using namespace wm::ir;

static void requireRank(const Tensor& t, size_t rank, const std::string& op) {
  if (t->ndim() != rank)
    WM_USER_ERROR() << op << ": input " << t->name << " has rank " << t->ndim() << ", expected "
                    << rank;
}

Tensor matmul(const Tensor& a, const Tensor& b, const std::string& name) {
  requireRank(a, 2, name);
  requireRank(b, 2, name);
  int64_t M = a->shape[0], K = a->shape[1], N = b->shape[1];
  if (b->shape[0] != K)
    WM_USER_ERROR() << name << ": inner dimensions differ (" << K << " vs " << b->shape[0] << ")";
  return reduce(name, "matmul", {M, N}, ReduceKind::Sum, {K},
                [&](auto& ax, auto& r) { return at(a, ax[0], r[0]) * at(b, r[0], ax[1]); },
                {"i", "j"}, {"k"});
}

Tensor dense(const Tensor& x, const Tensor& w, const std::string& name) {
  requireRank(x, 2, name);
  requireRank(w, 2, name);
  int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
  if (w->shape[1] != K)
    WM_USER_ERROR() << name << ": inner dimensions differ (" << K << " vs " << w->shape[1] << ")";
  return reduce(name, "dense", {M, N}, ReduceKind::Sum, {K},
                [&](auto& ax, auto& r) { return at(x, ax[0], r[0]) * at(w, ax[1], r[0]); },
                {"i", "j"}, {"k"});
}

Tensor batchMatmul(const Tensor& a, const Tensor& b, const std::string& name) {
  requireRank(a, 3, name);
  requireRank(b, 3, name);
  int64_t B = a->shape[0], M = a->shape[1], K = a->shape[2], N = b->shape[2];
  if (b->shape[0] != B || b->shape[1] != K)
    WM_USER_ERROR() << name << ": shapes " << a->name << " and " << b->name << " do not match";
  return reduce(
      name, "batch_matmul", {B, M, N}, ReduceKind::Sum, {K},
      [&](auto& ax, auto& r) { return at(a, ax[0], ax[1], r[0]) * at(b, ax[0], r[0], ax[2]); },
      {"b", "i", "j"}, {"k"});
}

} // namespace wm::ops
