// The 8-bit indexer's top-k agrees with the f32 scores it approximates (that every ISA gives the
// same codes and scores is engine/kernels/kernels.test.cpp's).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "engine/model/indexer.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/model/ops.hpp"

using namespace deepinfer::engine;

BOOST_AUTO_TEST_SUITE(indexer_int8)

BOOST_AUTO_TEST_CASE(top_k_of_the_8_bit_scores_matches_the_f32_scores) {
  // sum_h w_h relu(q_h . k_j) in f32 against its 8-bit approximation, over 4 tiles: the top 256
  // positions should be nearly the same set (what the cross-attention then attends to).
  const int64_t heads = 4, dim = 32, n = 4 * indexer::tile, k = 256;
  std::mt19937_64 rng(17);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> keys(static_cast<std::size_t>(n * dim)), q(static_cast<std::size_t>(heads * dim));
  for (auto& v : keys)
    v = nd(rng);
  for (auto& v : q)
    v = nd(rng);
  const std::vector<float> w{0.7f, 0.4f, 1.0f, 0.2f};
  std::vector<float> exact(static_cast<std::size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t h = 0; h < heads; ++h) {
      double d = 0;
      for (int64_t i = 0; i < dim; ++i)
        d += double{q[h * dim + i]} * keys[j * dim + i];
      s += w[h] * std::max(d, 0.0);
    }
    exact[j] = static_cast<float>(s);
  }
  const auto& kern = kernels::kernels_for(kernels::best_cpu_isa());
  const int64_t tb = indexer::tile_code_bytes(dim);
  std::vector<uint8_t> codes(static_cast<std::size_t>(4 * tb));
  std::vector<float> scales(static_cast<std::size_t>(n)), approx(static_cast<std::size_t>(n));
  std::vector<uint8_t> record(static_cast<std::size_t>(kernels::index_record_bytes(dim)));
  for (int64_t j = 0; j < n; ++j) {
    kern.index_key_record(keys.data() + j * dim, dim, record.data());
    indexer::put_record(record.data(), dim, j % indexer::tile, codes.data() + (j / indexer::tile) * tb,
                        scales.data() + (j / indexer::tile) * indexer::tile);
  }
  std::vector<int8_t> qcodes(static_cast<std::size_t>(indexer::query_code_bytes(heads, dim)));
  std::vector<float> coef(heads);
  std::vector<int32_t> offset(heads);
  indexer::query_codes qc{qcodes.data(), coef.data(), offset.data()};
  indexer::quantize_queries(q.data(), 1, heads, dim, w.data(), qc);
  for (int64_t t = 0; t < 4; ++t)
    kern.index_score_tile(qc, 1, heads, dim, codes.data() + t * tb, scales.data() + t * indexer::tile,
                        approx.data() + t * indexer::tile, n);
  double worst = 0, top = *std::max_element(exact.begin(), exact.end());
  for (int64_t j = 0; j < n; ++j)
    worst = std::max(worst, std::fabs(double{approx[j]} - exact[j]));
  BOOST_TEST(worst < 0.03 * top);
  std::vector<int64_t> a(k), b(k);
  std::vector<uint32_t> scratch(static_cast<std::size_t>(n));
  ops::top_k_positions(kern, exact.data(), n, k, a.data(), scratch.data());
  ops::top_k_positions(kern, approx.data(), n, k, b.data(), scratch.data());
  std::vector<int64_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  BOOST_TEST_MESSAGE("top-" << k << " overlap " << common.size() << ", worst error " << worst
                     << " of max score " << top);
  BOOST_TEST(common.size() >= static_cast<std::size_t>(k * 9 / 10));
}

BOOST_AUTO_TEST_SUITE_END()
