// Compares GEMM/convolution libraries on the convolution shapes of ResNet-50 and MobileNetV2
// (batch 1, 224x224), single-threaded, as the interpreter would use them on NCHW tensors:
//   openblas:  im2col (qopt's) + OpenBLAS cblas_sgemm
//   eigen:     im2col + Eigen's matrix product (compiled for the build's baseline ISA)
//   dnnl_gemm: im2col + oneDNN's dnnl_sgemm
//   dnnl_conv: oneDNN's convolution primitive, weights pre-reordered once, with the NCHW ->
//              blocked -> NCHW reorders of input and output that an NCHW interpreter pays
// Prints the best of 7 runs per shape, in ms of the thread's CPU time (wall time on a shared
// machine measures the neighbours). Run with OMP_NUM_THREADS=1.
#include <cblas.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <vector>

#include "Im2col.h"

namespace {

using qopt::interp::WindowGeometry;

struct ConvShape {
  const char* name;
  int64_t cin, cout, kernel, stride, size;
};

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

template <class F>
double bestOf7(F&& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    const double t0 = threadCpuMs();
    f();
    best = std::min(best, threadCpuMs() - t0);
  }
  return best;
}

}  // namespace

int main() {
  openblas_set_num_threads(1);
  Eigen::setNbThreads(1);
  const std::vector<ConvShape> shapes = {
      {"r50 7x7/2 3->64 @224", 3, 64, 7, 2, 224},     {"r50 1x1 64->256 @56", 64, 256, 1, 1, 56},
      {"r50 3x3 64 @56", 64, 64, 3, 1, 56},           {"r50 1x1 256->64 @56", 256, 64, 1, 1, 56},
      {"r50 3x3 128 @28", 128, 128, 3, 1, 28},        {"r50 3x3 256 @14", 256, 256, 3, 1, 14},
      {"r50 1x1 1024->256 @14", 1024, 256, 1, 1, 14}, {"r50 3x3 512 @7", 512, 512, 3, 1, 7},
      {"r50 1x1 2048->512 @7", 2048, 512, 1, 1, 7},   {"mb2 1x1 16->96 @112", 16, 96, 1, 1, 112},
      {"mb2 1x1 144->24 @56", 144, 24, 1, 1, 56},     {"mb2 1x1 384->64 @14", 384, 64, 1, 1, 14},
      {"mb2 1x1 960->160 @7", 960, 160, 1, 1, 7}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  double totals[4] = {0, 0, 0, 0};
  std::printf("openblas core: %s\n", openblas_get_corename());
  std::printf(
      "| shape | GFLOP | openblas | eigen | dnnl_gemm | dnnl_conv |\n|---|---|---|---|---|---|\n");
  for (const ConvShape& s : shapes) {
    const int64_t pad = s.kernel / 2;
    const int64_t out = (s.size + 2 * pad - s.kernel) / s.stride + 1;
    WindowGeometry g;
    g.spatialRank = 2;
    g.input = {s.size, s.size};
    g.kernel = {s.kernel, s.kernel};
    g.strides = {s.stride, s.stride};
    g.dilations = {1, 1};
    g.padsBegin = {pad, pad};
    g.padsEnd = {pad, pad};
    g.output = {out, out};
    const int64_t k = s.cin * s.kernel * s.kernel, n = out * out, m = s.cout;
    std::vector<float> x(static_cast<size_t>(s.cin * s.size * s.size)),
        w(static_cast<size_t>(m * k));
    std::vector<float> col(static_cast<size_t>(k * n)), y(static_cast<size_t>(m * n));
    for (float& v : x) v = uniform(rng);
    for (float& v : w) v = uniform(rng);
    const bool pointwise = s.kernel == 1 && s.stride == 1;
    auto columns = [&]() -> const float* {
      if (pointwise) return x.data();
      qopt::interp::im2col<float>(x.data(), s.cin, g, 0, n, 0.0f, col.data());
      return col.data();
    };
    const double tBlas = bestOf7([&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, w.data(), k, columns(),
                  n, 0.0f, y.data(), n);
    });
    const double tEigen = bestOf7([&] {
      using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      Eigen::Map<const Matrix> a(w.data(), m, k), b(columns(), k, n);
      Eigen::Map<Matrix> c(y.data(), m, n);
      c.noalias() = a * b;
    });
    const double tDnnlGemm = bestOf7(
        [&] { dnnl_sgemm('N', 'N', m, n, k, 1.0f, w.data(), k, columns(), n, 0.0f, y.data(), n); });
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims src{1, s.cin, s.size, s.size}, wts{m, s.cin, s.kernel, s.kernel},
        dst{1, m, out, out};
    const dnnl::memory::desc srcNchw(src, dt::f32, tag::nchw), dstNchw(dst, dt::f32, tag::nchw);
    const auto desc = dnnl::convolution_forward::desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc(src, dt::f32, tag::any), dnnl::memory::desc(wts, dt::f32, tag::any),
        dnnl::memory::desc(dst, dt::f32, tag::any), {s.stride, s.stride}, {pad, pad}, {pad, pad});
    const dnnl::convolution_forward::primitive_desc pd(desc, engine);
    dnnl::memory wUser({wts, dt::f32, tag::oihw}, engine, w.data()),
        wConv(pd.weights_desc(), engine);
    dnnl::reorder(wUser, wConv).execute(stream, wUser, wConv);
    dnnl::memory srcUser(srcNchw, engine, x.data()), dstUser(dstNchw, engine, y.data());
    dnnl::memory srcConv(pd.src_desc(), engine), dstConv(pd.dst_desc(), engine);
    const bool reorderSrc = pd.src_desc() != srcNchw, reorderDst = pd.dst_desc() != dstNchw;
    const dnnl::convolution_forward conv(pd);
    const double tDnnlConv = bestOf7([&] {
      if (reorderSrc) dnnl::reorder(srcUser, srcConv).execute(stream, srcUser, srcConv);
      conv.execute(stream, {{DNNL_ARG_SRC, reorderSrc ? srcConv : srcUser},
                            {DNNL_ARG_WEIGHTS, wConv},
                            {DNNL_ARG_DST, reorderDst ? dstConv : dstUser}});
      if (reorderDst) dnnl::reorder(dstConv, dstUser).execute(stream, dstConv, dstUser);
      stream.wait();
    });
    std::printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f |\n", s.name, 2.0 * m * n * k / 1e9, tBlas,
                tEigen, tDnnlGemm, tDnnlConv);
    totals[0] += tBlas;
    totals[1] += tEigen;
    totals[2] += tDnnlGemm;
    totals[3] += tDnnlConv;
  }
  std::printf("| total | | %.3f | %.3f | %.3f | %.3f |\n", totals[0], totals[1], totals[2],
              totals[3]);
  return 0;
}
