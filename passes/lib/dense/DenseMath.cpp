#include "qopt/dense/DenseMath.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>
#include <thread>

extern "C" {
// LAPACK (OpenBLAS exports it), column-major.
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda,
             int* info);
}

namespace qopt::wq::dense {

namespace {

// qopt starts OpenBLAS with one thread (the driver sets OPENBLAS_NUM_THREADS=1 unless it is set:
// the pthread build would otherwise start a thread per core when this pass's library is loaded,
// in every qopt process, and that thread spins for about a second). Its products and
// factorizations take every core once this pass uses them.
int everyCore() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void useEveryCore() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(everyCore()); });
}

}  // namespace

SingleThreaded::SingleThreaded() {
  useEveryCore();  // once, so that it does not undo this later
  openblas_set_num_threads(1);
}

SingleThreaded::~SingleThreaded() {
  openblas_set_num_threads(everyCore());
}

void addGramUpper(const double* x, int64_t rows, int64_t k, std::vector<double>& g) {
  if (rows <= 0 || k <= 0) return;
  useEveryCore();
  cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(k), static_cast<int>(rows),
              1.0, x, static_cast<int>(k), 1.0, g.data(), static_cast<int>(k));
}

void symmetrize(std::vector<double>& g, int64_t k) {
  const auto n = static_cast<size_t>(k);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) g[i * n + j] = g[j * n + i];
  }
}

std::vector<double> gram(const double* x, int64_t rows, int64_t k) {
  std::vector<double> g(static_cast<size_t>(k * k), 0.0);
  addGramUpper(x, rows, k, g);
  symmetrize(g, k);
  return g;
}

void multiplyAdd(bool transposeA, int64_t m, int64_t n, int64_t kk, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc) {
  if (m <= 0 || n <= 0 || kk <= 0) return;
  useEveryCore();
  cblas_dgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans, CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(kk), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), 1.0, c, static_cast<int>(ldc));
}

bool invertedCholeskyLower(std::vector<double>& a, int64_t n) {
  // Row-major storage read column-major is the transpose: LAPACK's upper factor U (a = U^T U)
  // is the row-major lower L, and inverting U in place leaves (U^-1)^T = L^-1 there.
  useEveryCore();
  const int size = static_cast<int>(n);
  int info = 0;
  dpotrf_("U", &size, a.data(), &size, &info);
  if (info != 0) return false;
  dtrtri_("U", "N", &size, a.data(), &size, &info);
  return info == 0;
}

}  // namespace qopt::wq::dense
