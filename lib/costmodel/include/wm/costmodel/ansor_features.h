// Ansor's static features: one row of kAnsorFeatures (164) values per buffer store of the
// lowered loop nest, every value sign-kept log2(x + 1). Groups, in order:
//   computation counts (16), vectorize/unroll/parallel annotations (3 x 11), GPU binding (8),
//   access to the top 5 buffers (5 x 18), arithmetic-intensity curve (10), allocation (4),
//   outer scope (3).
// The layout has a name and a version so a trained model refuses other layouts.
#pragma once

#include <wm/lower/lower.h>

#include <array>
#include <vector>

namespace wm::costmodel {

constexpr int kAnsorFeatures = 164;
constexpr const char* kAnsorFeatureLayout = "ansor-164-v1";
using FeatureRow = std::array<float, kAnsorFeatures>;

std::vector<FeatureRow> extractAnsorFeatures(const lower::LoweredFunc& f);

} // namespace wm::costmodel
