// Every ISA's kernels give the bits of the portable ones (the canonical orders), on shapes that
// leave every kind of tail; the portable ones are accurate against double references. An ISA this
// CPU cannot run is named in the log as not tested here.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/canonical.hpp"
#include "engine/kernels/kernel_table.hpp"
#include "engine/testing/random_floats.hpp"

using namespace deepinfer::engine::kernels;

namespace {

std::vector<float> normal(std::size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// The ISAs besides portable that this CPU runs; logs the ones it cannot.
std::vector<cpu_isa> fast_isas() {
  std::vector<cpu_isa> out;
  for (auto isa : {cpu_isa::avx2, cpu_isa::avx512}) {
    if (cpu_supports(isa))
      out.push_back(isa);
    else
      BOOST_TEST_MESSAGE("skipped: the " << to_string(isa) << " kernels, not run by this CPU ("
                         << cpu_feature_summary() << ")");
  }
  return out;
}

const kernel_table& ref() {
  return kernels_for(cpu_isa::portable);
}

} // namespace

BOOST_AUTO_TEST_SUITE(kernel_tables)

BOOST_AUTO_TEST_CASE(matrix_products_have_the_portable_bits_on_every_isa) {
  for (auto isa : fast_isas()) {
    const auto& k = kernels_for(isa);
    for (int64_t kk : {1, 7, 16, 33, 128})
      for (int64_t n : {1, 5, 16, 17, 40, 128}) {
        const int64_t rows = 13;
        auto w = normal(static_cast<std::size_t>(n * kk), static_cast<uint64_t>(n * 1000 + kk));
        auto x = normal(static_cast<std::size_t>(rows * kk), 7);
        std::vector<float> wp(static_cast<std::size_t>((n + 15) / 16 * 16 * kk));
        pack_panels(w.data(), n, kk, wp.data());
        for (bool acc : {false, true})
          for (int64_t m : {1, 2, 5, 6, 7, 8, 9, 13}) {
            auto y0 = normal(static_cast<std::size_t>(m * n), 3);
            auto y1 = y0;
            ref().gemm_packed(x.data(), m, kk, wp.data(), n, y0.data(), n, acc);
            k.gemm_packed(x.data(), m, kk, wp.data(), n, y1.data(), n, acc);
            BOOST_TEST(same_bits(y0, y1), to_string(isa) << " gemm_packed m=" << m << " k=" << kk << " n=" << n << " acc=" << acc);
          }
        // A column range (whole panels) into a wider y: the same bits as that part of the whole.
        if (n > 16) {
          const int64_t m = 7, ldy = n + 5;
          std::vector<float> whole(static_cast<std::size_t>(m * n)), part(static_cast<std::size_t>(m * ldy), -1.0f);
          k.gemm_packed(x.data(), m, kk, wp.data(), n, whole.data(), n, false);
          k.gemm_packed(x.data(), m, kk, wp.data() + 16 * kk, n - 16, part.data() + 16, ldy, false);
          int bad = 0;
          for (int64_t r = 0; r < m; ++r)
            bad += std::memcmp(&whole[static_cast<std::size_t>(r * n + 16)], &part[static_cast<std::size_t>(r * ldy + 16)], (n - 16) * sizeof(float)) != 0;
          BOOST_TEST(bad == 0, to_string(isa) << " column range k=" << kk << " n=" << n);
          BOOST_TEST(part[static_cast<std::size_t>(ldy - 1)] == -1.0f); // nothing past the range
        }
      }
  }
}

BOOST_AUTO_TEST_CASE(bf16_panels_give_the_bits_of_f32_panels_of_the_same_values_on_every_isa) {
  auto isas = fast_isas();
  isas.insert(isas.begin(), cpu_isa::portable);
  for (int64_t kk : {1, 16, 33, 128})
    for (int64_t n : {1, 17, 40, 129}) {
      // Values of a bf16 checkpoint: the top halves of f32s, negatives and a zero among them.
      auto w = normal(static_cast<std::size_t>(n * kk), static_cast<uint64_t>(n * 77 + kk), 2.0f);
      BOOST_TEST(!all_bf16_values(w.data(), n * kk));
      deepinfer::engine::testing::cut_to_bf16_values(w);
      w[0] = -0.0f;
      BOOST_TEST(all_bf16_values(w.data(), n * kk));
      const auto padded = static_cast<std::size_t>((n + 15) / 16 * 16 * kk);
      std::vector<float> wp(padded);
      std::vector<uint16_t> wb(padded);
      pack_panels(w.data(), n, kk, wp.data());
      pack_panels_bf16(w.data(), n, kk, wb.data());
      auto x = normal(static_cast<std::size_t>(13 * kk), 9);
      for (auto isa : isas)
        for (bool acc : {false, true})
          for (int64_t m : {1, 2, 6, 7, 13}) {
            auto y0 = normal(static_cast<std::size_t>(m * n), 4);
            auto y1 = y0;
            ref().gemm_packed(x.data(), m, kk, wp.data(), n, y0.data(), n, acc);
            kernels_for(isa).gemm_packed_bf16(x.data(), m, kk, wb.data(), n, y1.data(), n, acc);
            BOOST_TEST(same_bits(y0, y1), to_string(isa) << " gemm_packed_bf16 m=" << m << " k=" << kk << " n=" << n << " acc=" << acc);
          }
      // A column range (whole panels), as the backend splits a wide product.
      if (n > 16)
        for (auto isa : isas) {
          std::vector<float> whole(static_cast<std::size_t>(3 * n)), part(static_cast<std::size_t>(3 * n));
          ref().gemm_packed(x.data(), 3, kk, wp.data(), n, whole.data(), n, false);
          kernels_for(isa).gemm_packed_bf16(x.data(), 3, kk, wb.data() + 16 * kk, n - 16, part.data() + 16, n, false);
          int bad = 0;
          for (int64_t r = 0; r < 3; ++r)
            bad += std::memcmp(&whole[static_cast<std::size_t>(r * n + 16)], &part[static_cast<std::size_t>(r * n + 16)], (n - 16) * sizeof(float)) != 0;
          BOOST_TEST(bad == 0, to_string(isa) << " bf16 column range k=" << kk << " n=" << n);
        }
    }
}

BOOST_AUTO_TEST_CASE(norms_and_element_wise_functions_have_the_portable_bits_on_every_isa) {
  auto a = normal(1000, 11, 3.0f), b = normal(1000, 12, 3.0f);
  // Arguments past exp's bounds, zeros of both signs, large magnitudes.
  for (float special : {-200.0f, -88.0f, -87.5f, -87.0f, -0.0f, 0.0f, 87.9f, 88.0f, 88.5f, 300.0f})
    a.push_back(special), b.push_back(-special);
  const auto n = static_cast<int64_t>(a.size());
  for (auto isa : fast_isas()) {
    const auto& k = kernels_for(isa);
    for (int64_t len = 0; len <= 70; ++len)
      BOOST_TEST(ref().dot(a.data(), b.data(), len) == k.dot(a.data(), b.data(), len), to_string(isa) << " dot n=" << len);
    for (int64_t h : {7, 16, 100, 128}) {
      std::vector<float> o0(static_cast<std::size_t>(3 * h)), o1(o0.size());
      ref().rms_norm(a.data(), 3, h, b.data(), 1e-6f, o0.data());
      k.rms_norm(a.data(), 3, h, b.data(), 1e-6f, o1.data());
      BOOST_TEST(same_bits(o0, o1), to_string(isa) << " rms_norm h=" << h);
    }
    std::vector<float> s0(a.size()), s1(a.size());
    ref().sigmoid(a.data(), n, s0.data());
    k.sigmoid(a.data(), n, s1.data());
    BOOST_TEST(same_bits(s0, s1), to_string(isa) << " sigmoid");
    ref().exp_shifted(a.data(), n, 1.5f, s0.data());
    k.exp_shifted(a.data(), n, 1.5f, s1.data());
    BOOST_TEST(same_bits(s0, s1), to_string(isa) << " exp_shifted");
    auto u0 = a, u1 = a;
    ref().silu_mul(u0.data(), b.data(), n);
    k.silu_mul(u1.data(), b.data(), n);
    BOOST_TEST(same_bits(u0, u1), to_string(isa) << " silu_mul");
    auto x0 = a, x1 = a;
    ref().axpy(x0.data(), b.data(), 0.37f, n - 3);
    k.axpy(x1.data(), b.data(), 0.37f, n - 3);
    BOOST_TEST(same_bits(x0, x1), to_string(isa) << " axpy");
  }
}

BOOST_AUTO_TEST_CASE(attention_has_the_portable_bits_on_every_isa) {
  struct shape {
    int64_t heads, kv_heads, d;
  };
  for (auto isa : fast_isas()) {
    const auto& k = kernels_for(isa);
    for (auto s : {shape{4, 2, 32}, shape{8, 2, 32}, shape{2, 2, 16}, shape{4, 1, 64}, shape{2, 1, 8}, shape{2, 2, 12}})
      for (int64_t nk : {1, 5, 8, 15, 16, 17, 100, 134, 333}) {
        const int64_t kvw = s.kv_heads * s.d, qd = s.heads * s.d;
        // A block of up to 11 consecutive rows of one sequence whose windows (at most nk keys)
        // slide over a span: the first rows' windows start at the span's start and grow.
        const int64_t rows = std::min<int64_t>(11, nk), span = nk + rows - 1, stride = span + 3;
        std::vector<int64_t> first(static_cast<std::size_t>(rows)), count(first.size());
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t end = nk + r; // the row's last key + 1
          first[static_cast<std::size_t>(r)] = std::max<int64_t>(0, end - (nk > 8 ? nk - 3 : nk));
          count[static_cast<std::size_t>(r)] = end - first[static_cast<std::size_t>(r)];
        }
        auto q = normal(static_cast<std::size_t>(rows * qd), 21);
        auto kt = normal(static_cast<std::size_t>(kvw * stride), 22, 2.0f);
        auto v = normal(static_cast<std::size_t>(span * kvw), 23);
        std::vector<float> sc0(static_cast<std::size_t>(rows * (span + 32) + s.heads * span)), sc1(sc0.size());
        std::vector<float> o0(q.size()), o1(q.size());
        ref().attend_rows(q.data(), rows, qd, first.data(), count.data(), kt.data(), stride, v.data(), s.heads, s.kv_heads, s.d, sc0.data(), o0.data());
        k.attend_rows(q.data(), rows, qd, first.data(), count.data(), kt.data(), stride, v.data(), s.heads, s.kv_heads, s.d, sc1.data(), o1.data());
        BOOST_TEST(same_bits(o0, o1), to_string(isa) << " attend_rows nk=" << nk << " d=" << s.d << " heads=" << s.heads);
        // Any row alone gives its bits in the block.
        const int64_t r = rows / 2;
        std::vector<float> one(static_cast<std::size_t>(qd));
        k.attend_rows(q.data() + r * qd, 1, qd, &first[static_cast<std::size_t>(r)], &count[static_cast<std::size_t>(r)], kt.data(), stride, v.data(), s.heads, s.kv_heads, s.d, sc1.data(), one.data());
        BOOST_TEST(std::memcmp(one.data(), o1.data() + r * qd, one.size() * sizeof(float)) == 0, to_string(isa) << " row alone nk=" << nk);
        // Every row over the same keys, [0, nk) (the vision encoder's bidirectional attention).
        const std::vector<int64_t> all_first(first.size(), 0), all_count(first.size(), nk);
        ref().attend_rows(q.data(), rows, qd, all_first.data(), all_count.data(), kt.data(), stride, v.data(), s.heads, s.kv_heads, s.d, sc0.data(), o0.data());
        k.attend_rows(q.data(), rows, qd, all_first.data(), all_count.data(), kt.data(), stride, v.data(), s.heads, s.kv_heads, s.d, sc1.data(), o1.data());
        BOOST_TEST(same_bits(o0, o1), to_string(isa) << " attend_rows, one window, nk=" << nk << " d=" << s.d);
        // Gathered: each key row [kv_heads x d] followed by its value row.
        auto rows_kv = normal(static_cast<std::size_t>(nk * 2 * kvw), 24, 2.0f);
        std::vector<const float*> kv(static_cast<std::size_t>(nk));
        for (int64_t j = 0; j < nk; ++j)
          kv[static_cast<std::size_t>(j)] = rows_kv.data() + (nk - 1 - j) * 2 * kvw; // scattered order
        std::vector<float> g0(static_cast<std::size_t>(qd)), g1(g0.size());
        ref().attend_gathered(q.data(), kv.data(), kvw, nk, s.heads, s.kv_heads, s.d, sc0.data(), g0.data());
        k.attend_gathered(q.data(), kv.data(), kvw, nk, s.heads, s.kv_heads, s.d, sc1.data(), g1.data());
        BOOST_TEST(same_bits(g0, g1), to_string(isa) << " attend_gathered nk=" << nk << " d=" << s.d << " heads=" << s.heads);
      }
  }
}

BOOST_AUTO_TEST_CASE(indexer_codes_and_scores_have_the_portable_bits_on_every_isa) {
  for (auto isa : fast_isas()) {
    const auto& k = kernels_for(isa);
    for (auto [heads, dim] : {std::pair<int64_t, int64_t>{4, 32}, {8, 64}, {3, 32}, {4, 20}, {4, 16}}) {
      auto keys = normal(static_cast<std::size_t>(index_tile * dim), static_cast<uint64_t>(heads * 100 + dim));
      std::fill(keys.begin() + 5 * dim, keys.begin() + 6 * dim, 0.0f); // a zero key
      // Records, as the KV pool keeps them, then copied into a tile as the forward does.
      const int64_t rb = index_record_bytes(dim);
      std::vector<uint8_t> r0(static_cast<std::size_t>(index_tile * rb)), r1(r0.size());
      for (int64_t j = 0; j < index_tile; ++j) {
        ref().index_key_record(keys.data() + j * dim, dim, r0.data() + j * rb);
        k.index_key_record(keys.data() + j * dim, dim, r1.data() + j * rb);
      }
      BOOST_TEST((r0 == r1), to_string(isa) << " index_key_record dim=" << dim);
      std::vector<uint8_t> c0(static_cast<std::size_t>(index_tile_bytes(dim)));
      std::vector<float> s0(index_tile);
      for (int64_t j = 0; j < index_tile; ++j) {
        const uint8_t* rec = r0.data() + j * rb;
        for (int64_t g = 0; g < index_padded(dim); g += index_group)
          std::memcpy(c0.data() + index_code_at(g, j), rec + g, index_group);
        std::memcpy(&s0[static_cast<std::size_t>(j)], rec + index_padded(dim), sizeof(float));
      }
      BOOST_TEST(s0[5] == 0.0f); // the zero key
      // Queries: random codes in [-63, 63] (index_query_limit) with their offsets.
      const int64_t rows = 5, p = index_padded(dim);
      std::mt19937_64 rng(static_cast<uint64_t>(dim));
      std::vector<int8_t> qc(static_cast<std::size_t>(rows * heads * p), 0);
      std::vector<float> coef(static_cast<std::size_t>(rows * heads));
      std::vector<int32_t> offset(coef.size());
      for (int64_t rh = 0; rh < rows * heads; ++rh) {
        int32_t sum = 0;
        for (int64_t i = 0; i < dim; ++i) {
          const auto c = static_cast<int8_t>(static_cast<int>(rng() % (2 * index_query_limit + 1)) - index_query_limit);
          qc[static_cast<std::size_t>(rh * p + i)] = c;
          sum += c;
        }
        coef[static_cast<std::size_t>(rh)] = (rh % 3 == 2 ? -0.5f : 1.0f) / static_cast<float>(rh + 1);
        offset[static_cast<std::size_t>(rh)] = 128 * sum;
      }
      const index_query_codes q{qc.data(), coef.data(), offset.data()};
      const int64_t stride = index_tile + 16;
      std::vector<float> o0(static_cast<std::size_t>(rows * stride), -1.0f), o1(o0);
      ref().index_score_tile(q, rows, heads, dim, c0.data(), s0.data(), o0.data(), stride);
      k.index_score_tile(q, rows, heads, dim, c0.data(), s0.data(), o1.data(), stride);
      BOOST_TEST(same_bits(o0, o1), to_string(isa) << " index_score_tile heads=" << heads << " dim=" << dim);
      BOOST_TEST(o1[5] == 0.0f);          // the zero key scores 0
      BOOST_TEST(o1[index_tile] == -1.0f); // nothing written past the tile
    }
  }
}

BOOST_AUTO_TEST_CASE(top_k_helpers_give_the_portable_answers_on_every_isa) {
  std::mt19937_64 rng(5);
  std::vector<float> s(32 * 40 + 13);
  for (auto& x : s)
    x = static_cast<float>(rng() % 64) * 0.25f - 8.0f; // many ties
  s[3] = -0.0f, s[4] = 0.0f;
  std::vector<uint32_t> keys(s.size());
  for (std::size_t i = 0; i < s.size(); ++i)
    keys[i] = canonical::order_key(s[i]);
  for (auto isa : fast_isas()) {
    const auto& k = kernels_for(isa);
    std::vector<uint32_t> g0(40), g1(40);
    ref().group_max_keys(s.data(), 40, g0.data());
    k.group_max_keys(s.data(), 40, g1.data());
    BOOST_TEST((g0 == g1), to_string(isa) << " group_max_keys");
    for (float t : {-8.0f, -0.0f, 0.0f, 3.5f, 100.0f}) {
      const auto n = static_cast<int64_t>(s.size());
      std::vector<int64_t> a(s.size()), b(s.size());
      const int64_t ca = ref().collect_at_least(s.data(), n, t, 7, a.data());
      const int64_t cb = k.collect_at_least(s.data(), n, t, 7, b.data());
      a.resize(static_cast<std::size_t>(ca)), b.resize(static_cast<std::size_t>(cb));
      BOOST_TEST((a == b), to_string(isa) << " collect_at_least t=" << t);
      const uint32_t kt = canonical::order_key(t);
      BOOST_TEST(ref().count_keys_at_least(keys.data(), n, kt) == k.count_keys_at_least(keys.data(), n, kt), to_string(isa) << " count t=" << t);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_canonical_exp_is_accurate_and_bounded) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(canonical::exp(x) - want) / want);
  }
  BOOST_TEST_MESSAGE("canonical exp: worst relative error " << worst);
  BOOST_TEST(worst < 3e-7);
  BOOST_TEST(canonical::exp(0.0f) == 1.0f);
  BOOST_TEST(canonical::exp(-0.0f) == 1.0f);
  BOOST_TEST(canonical::exp(-87.5f) == 0.0f);
  BOOST_TEST(canonical::exp(-INFINITY) == 0.0f);
  BOOST_TEST(std::isfinite(canonical::exp(1000.0f)));
}

BOOST_AUTO_TEST_CASE(portable_products_and_attention_match_double_references) {
  const int64_t m = 3, kk = 37, n = 21;
  auto w = normal(static_cast<std::size_t>(n * kk), 31), x = normal(static_cast<std::size_t>(m * kk), 32);
  std::vector<float> wp(static_cast<std::size_t>(32 * kk)), y(static_cast<std::size_t>(m * n));
  pack_panels(w.data(), n, kk, wp.data());
  ref().gemm_packed(x.data(), m, kk, wp.data(), n, y.data(), n, false);
  double worst = 0;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t c = 0; c < kk; ++c)
        want += double{x[r * kk + c]} * w[j * kk + c];
      worst = std::max(worst, std::fabs(want - y[r * n + j]));
    }
  BOOST_TEST(worst < 1e-4);
  // One head over 50 keys.
  const int64_t d = 32, nk = 50;
  auto q = normal(d, 33), kt = normal(static_cast<std::size_t>(d * nk), 34), v = normal(static_cast<std::size_t>(nk * d), 35);
  std::vector<float> sc(nk), out(d);
  const int64_t first = 0;
  ref().attend_rows(q.data(), 1, d, &first, &nk, kt.data(), nk, v.data(), 1, 1, d, sc.data(), out.data());
  std::vector<double> p(nk);
  double mx = -1e300, sum = 0;
  for (int64_t j = 0; j < nk; ++j) {
    double s = 0;
    for (int64_t i = 0; i < d; ++i)
      s += double{q[i]} * kt[i * nk + j];
    p[j] = s / std::sqrt(double(d));
    mx = std::max(mx, p[j]);
  }
  for (auto& e : p)
    sum += (e = std::exp(e - mx));
  worst = 0;
  for (int64_t i = 0; i < d; ++i) {
    double want = 0;
    for (int64_t j = 0; j < nk; ++j)
      want += p[j] / sum * v[j * d + i];
    worst = std::max(worst, std::fabs(want - out[i]));
  }
  BOOST_TEST(worst < 1e-5);
}

BOOST_AUTO_TEST_CASE(isa_choice_names_what_is_missing) {
  BOOST_TEST((choose_cpu_isa("auto").isa == best_cpu_isa()));
  BOOST_TEST((choose_cpu_isa("portable").isa == cpu_isa::portable));
  auto bad = choose_cpu_isa("sse9");
  BOOST_TEST(!bad.isa);
  BOOST_TEST(bad.error.find("expected one of auto, portable, avx2, avx512") != std::string::npos);
  for (auto isa : {cpu_isa::avx2, cpu_isa::avx512}) {
    auto c = choose_cpu_isa(to_string(isa));
    BOOST_TEST(c.isa.has_value() == cpu_supports(isa));
    if (!c.isa)
      BOOST_TEST(c.error.find("cannot run") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
