// gemm_invariant.cu — rp_cuda_gemm_invariant: the invariant GEMM of numerics invariant
// (engine/ops.h rp_gemm_invariant's contract) on device memory. Every output element is
//     acc = +0.0f; for k = 0 .. K-1: acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
//     C[i][j] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i][j]
// each operation rounded to fp32, left to right. __fmaf_rn is IEEE fma (one rounding), as
// the CPU's fmaf is, and the epilogue's products and sum are explicit round-to-nearest
// intrinsics so nvcc cannot contract them into an FMA: the bits are those of the CPU's
// rp_gemm_invariant for the same inputs, on every GPU, whatever M, the tiling or the launch.
// That is the GEMM half of issue 19 on the GPU; the engine does not call it yet (a CUDA case
// with numerics invariant is refused at validation until the canonical attention has its
// device kernel too).
//
// Tiling (speed only): a block of 256 threads computes a BM x BN tile of C; each thread a
// TM x TN micro-tile in registers. K advances in slices of BK staged in shared memory; a
// slice's k run in order, and the accumulators carry across slices, so every element's
// chain stays k = 0 .. K-1. The last slice runs only its kn <= BK real k, so the chain has
// exactly K links, as the contract writes it.
//
// bf16 is the caller's, as on the CPU (rp_gemm rounds the inputs, then the product is this
// one on the rounded values).
#include <cuda_runtime.h>

#include "engine/cuda/cuda_gemm.h"

namespace {

constexpr int BM = 64, BN = 64, BK = 16;  // the block's tile of C, and the k slice
constexpr int TM = 4, TN = 4;             // each thread's micro-tile
constexpr int THREADS = (BM / TM) * (BN / TN);
static_assert(THREADS == 256, "one block is 16 x 16 threads");

// op(A)[i][k] with A (M, K) row-major at lda, or A (K, M) when tA.
__device__ __forceinline__ float op_at(const float *X, int t, long long ld, int r, int k) {
    return t ? X[(long long)k * ld + r] : X[(long long)r * ld + k];
}

__global__ void __launch_bounds__(THREADS)
invariant_kernel(int tA, int tB, int M, int N, int K, float alpha, const float *__restrict__ A, long long lda,
                 const float *__restrict__ B, long long ldb, float beta, float *__restrict__ C, long long ldc) {
    __shared__ float As[BK][BM];  // As[k][i] = op(A)[i0 + i][k0 + k]
    __shared__ float Bs[BK][BN];  // Bs[k][j] = op(B)[k0 + k][j0 + j]
    const int i0 = blockIdx.y * BM, j0 = blockIdx.x * BN;
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    float acc[TM][TN];
#pragma unroll
    for (int r = 0; r < TM; r++)
#pragma unroll
        for (int c = 0; c < TN; c++) acc[r][c] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int kn = K - k0 < BK ? K - k0 : BK;
        // stage the slice; out-of-range entries are never read by a live chain (kn, and the
        // stores below skip rows and columns past M and N), zero keeps them finite
        for (int e = threadIdx.x; e < BK * BM; e += THREADS) {
            const int k = tA ? e / BM : e % BK, i = tA ? e % BM : e / BK;  // unit stride in memory
            As[k][i] = (i0 + i < M && k < kn) ? op_at(A, tA, lda, i0 + i, k0 + k) : 0.0f;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            const int k = tB ? e % BK : e / BN, j = tB ? e / BK : e % BN;
            Bs[k][j] = (j0 + j < N && k < kn) ? op_at(B, !tB, ldb, j0 + j, k0 + k) : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < kn; k++) {  // in order: the chain
            float a[TM], b[TN];
#pragma unroll
            for (int r = 0; r < TM; r++) a[r] = As[k][ty + r * (BM / TM)];
#pragma unroll
            for (int c = 0; c < TN; c++) b[c] = Bs[k][tx + c * (BN / TN)];
#pragma unroll
            for (int r = 0; r < TM; r++)
#pragma unroll
                for (int c = 0; c < TN; c++) acc[r][c] = __fmaf_rn(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < TM; r++) {
        const int i = i0 + ty + r * (BM / TM);
        if (i >= M) continue;
#pragma unroll
        for (int c = 0; c < TN; c++) {
            const int j = j0 + tx + c * (BN / TN);
            if (j >= N) continue;
            float *cij = C + (long long)i * ldc + j;
            const float v = __fmul_rn(alpha, acc[r][c]);
            *cij = beta == 0.0f ? v : __fadd_rn(v, __fmul_rn(beta, *cij));
        }
    }
}

}  // namespace

extern "C" rp_status rp_cuda_gemm_invariant(int transA, int transB, int M, int N, int K, float alpha,
                                            const float *A, int lda, const float *B, int ldb, float beta, float *C,
                                            int ldc, cudaStream_t stream, rp_error *err) {
    if (M < 0 || N < 0 || K < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: negative size (M %d, N %d, K %d)", M, N, K);
    if (ldc < N || (transA ? lda < M : lda < K) || (transB ? ldb < K : ldb < N))
        return RP_FAIL(err, RP_ERR_INVALID,
                       "invariant GEMM: leading dimension too small (M %d N %d K %d, transA %d lda %d, transB %d "
                       "ldb %d, ldc %d)", M, N, K, transA, lda, transB, ldb, ldc);
    if (M == 0 || N == 0) return RP_OK;
    if (K > 0 && (!A || !B)) return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: A or B is NULL with K %d", K);
    const dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
    if (grid.y > 65535u)
        return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: M %d needs more than 65535 row tiles", M);
    invariant_kernel<<<grid, THREADS, 0, stream>>>(transA != 0, transB != 0, M, N, K, alpha, A, lda, B, ldb, beta, C,
                                                  ldc);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "invariant GEMM: launch: %s", cudaGetErrorString(e));
    return RP_OK;
}
