// The dense double-precision linear algebra of AWQ, GPTQ and smooth's alpha search, on row-major
// matrices, through OpenBLAS's BLAS and LAPACK (the Gram matrices and products of a ViT-B's
// 3072-wide MLP cost seconds there, minutes in plain loops).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qopt::wq::dense {

/// While alive, OpenBLAS runs its products on the calling thread only: for many small products
/// between other work (the Gram matrices of a model run), where its idle threads would spin
/// against that work.
class SingleThreaded {
 public:
  SingleThreaded();
  ~SingleThreaded();
  SingleThreaded(const SingleThreaded&) = delete;
  SingleThreaded& operator=(const SingleThreaded&) = delete;
};

/// X^T X for the rows x k row-major X: k x k, both triangles filled.
std::vector<double> gram(const double* x, int64_t rows, int64_t k);

/// g's upper triangle += X^T X's (g is k x k); symmetrize() then fills the lower one.
void addGramUpper(const double* x, int64_t rows, int64_t k, std::vector<double>& g);
void symmetrize(std::vector<double>& g, int64_t k);

/// X^T X summed over batches of rows of width k, as a model run delivers them: add() fills the
/// upper triangle, finish() the lower one.
struct GramSum {
  int64_t k = 0;
  int64_t rows = 0;
  std::vector<double> gram;  // k x k, row-major

  explicit GramSum(int64_t width = 0)
      : k(width), gram(static_cast<std::size_t>(width * width), 0.0) {}
  /// `count` rows of k values each.
  void add(const double* x, int64_t count) {
    addGramUpper(x, count, k, gram);
    rows += count;
  }
  void finish() { symmetrize(gram, k); }
};

/// C (m x n) += alpha * op(A) * B, with op(A) = A (m x kk, leading dim lda) or, transposed,
/// A^T (A kk x m). B is kk x n (leading dim ldb), C leading dim ldc.
void multiplyAdd(bool transposeA, int64_t m, int64_t n, int64_t kk, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc);

/// In place: the lower triangle of the symmetric positive definite n x n `a` becomes L^-1, where
/// a = L L^T (L lower); the strict upper triangle is left as it was. False when `a` is not
/// positive definite.
bool invertedCholeskyLower(std::vector<double>& a, int64_t n);

}  // namespace qopt::wq::dense
