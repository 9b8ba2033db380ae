// gemm_invariant.cu — rp_cuda_gemm_invariant: the invariant GEMM of numerics invariant
// (engine/ops.h rp_gemm_invariant's contract) on device memory. Every output element is
//     acc = +0.0f; for k = 0 .. K-1: acc = fmaf(op(A)[i][k], op(B)[k][j], acc);
//     C[i][j] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i][j]
// each operation rounded to fp32, left to right. __fmaf_rn is IEEE fma (one rounding), as
// the CPU's fmaf is, and the epilogue's products and sum are explicit round-to-nearest
// intrinsics so nvcc cannot contract them into an FMA: the bits are those of the CPU's
// rp_gemm_invariant for the same inputs, on every GPU, whatever M, the tiling or the launch.
// The CUDA device's GEMM and nn.Linear under numerics invariant (engine/cuda/device_cuda.c).
//
// Tiling (speed only): a block of 256 threads computes a T x T tile of C, T = 128 (8 x 8 per
// thread) or, when 128-tiles would leave SMs idle (fewer tiles than twice the SMs: DiT's
// 1024-row GEMMs), T = 64 (4 x 4 per thread). A thread's micro-tile takes rows t*u/2 .. and
// T/2 + t*u/2 .. (u its size, t its row index; likewise the columns), so a warp's shared-memory
// reads are consecutive vectors. K advances in slices of BK = 8 staged in shared memory
// (op(A) and op(B) stored k-major, rows padded by 4 floats against bank conflicts when a slice
// is stored from row-major memory); a slice's k run in order and the accumulators carry
// across slices, so every element's chain stays k = 0 .. K-1 whatever the tile. The last
// slice runs only its kn <= BK real k, so the chain has exactly K links, as the contract
// writes it. Rows and columns past M and N are computed on zeros and never stored.
//
// bf16 = 1 rounds every op(A) and op(B) element to bf16 as it is staged (rp_cuda_bf16_round,
// bitwise rp_f32_to_bf16), as the CPU's rp_gemm rounds its inputs before rp_gemm_invariant:
// the product is then this one on the rounded values, bitwise the CPU's bf16 invariant GEMM.
#include <cuda_runtime.h>

#include "engine/cuda/cuda_common.h"
#include "engine/cuda/cuda_gemm.h"

namespace {

constexpr int BK = 8;       // the k slice
constexpr int PAD = 4;      // floats after each staged k row
constexpr int THREADS = 256; // 16 x 16 threads, each a U x U micro-tile of the T x T tile

// op(X)[r][k] of the stored X: (rows, K) row-major at ld when kmajor == 0, (K, rows) when 1.
__device__ __forceinline__ float op_at(const float *X, int kmajor, long long ld, int r, int k, int bf16) {
    const float x = kmajor ? X[(long long)k * ld + r] : X[(long long)r * ld + k];
    return bf16 ? rp_cuda_bf16_round(x) : x;
}

// Stages rows [r0, r0 + T) x k [k0, k0 + kn) of op(X) into S[k][r] (zeros past rows / kn),
// T BK / THREADS values a thread, in the order that reads memory with unit stride.
template <int T>
__device__ __forceinline__ void stage(float (*S)[T + PAD], const float *X, int kmajor, long long ld, int r0,
                                      int rows, int k0, int kn, int bf16) {
    static_assert(T * BK % THREADS == 0, "the slice divides over the threads");
#pragma unroll
    for (int q = 0; q < T * BK / THREADS; q++) {
        const int e = threadIdx.x + q * THREADS;
        const int k = kmajor ? e / T : e % BK, r = kmajor ? e % T : e / BK;
        S[k][r] = (r0 + r < rows && k < kn) ? op_at(X, kmajor, ld, r0 + r, k0 + k, bf16) : 0.0f;
    }
}

// The U values a thread takes from a staged k row: [U/2 t, U/2 t + U/2) and T/2 + the same.
template <int T, int U>
__device__ __forceinline__ void take(float (&v)[U], const float *row, int t) {
    if constexpr (U == 8) {
        const float4 lo = *reinterpret_cast<const float4 *>(row + 4 * t);
        const float4 hi = *reinterpret_cast<const float4 *>(row + T / 2 + 4 * t);
        v[0] = lo.x; v[1] = lo.y; v[2] = lo.z; v[3] = lo.w;
        v[4] = hi.x; v[5] = hi.y; v[6] = hi.z; v[7] = hi.w;
    } else {
        static_assert(U == 4, "micro-tiles of 8 or 4");
        const float2 lo = *reinterpret_cast<const float2 *>(row + 2 * t);
        const float2 hi = *reinterpret_cast<const float2 *>(row + T / 2 + 2 * t);
        v[0] = lo.x; v[1] = lo.y; v[2] = hi.x; v[3] = hi.y;
    }
}

// One link of every chain of the thread's micro-tile: acc[r][c] = fma(op(A)[i_r][k], op(B)[k][j_c], acc).
template <int T, int U>
__device__ __forceinline__ void chain_step(float (&acc)[U][U], const float *a_row, const float *b_row, int tx,
                                           int ty) {
    float a[U], b[U];
    take<T, U>(a, a_row, ty);
    take<T, U>(b, b_row, tx);
#pragma unroll
    for (int r = 0; r < U; r++)
#pragma unroll
        for (int c = 0; c < U; c++) acc[r][c] = __fmaf_rn(a[r], b[c], acc[r][c]);
}

// A thread's micro-tile row or column u (0 .. U-1) -> its offset in the block's tile (take's order).
template <int T, int U>
__device__ __forceinline__ int tile_at(int t, int u) { return (u < U / 2 ? 0 : T / 2) + (U / 2) * t + u % (U / 2); }

template <int T>
__global__ void __launch_bounds__(THREADS)
invariant_kernel(int tA, int tB, int M, int N, int K, float alpha, const float *__restrict__ A, long long lda,
                 const float *__restrict__ B, long long ldb, float beta, float *__restrict__ C, long long ldc,
                 int bf16) {
    constexpr int U = T / 16; // the micro-tile
    static_assert(T == 64 || T == 128, "tiles of 64 or 128");
    __shared__ __align__(16) float As[BK][T + PAD]; // As[k][i] = op(A)[i0 + i][k0 + k]
    __shared__ __align__(16) float Bs[BK][T + PAD]; // Bs[k][j] = op(B)[k0 + k][j0 + j]
    const int i0 = blockIdx.y * T, j0 = blockIdx.x * T;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[U][U];
#pragma unroll
    for (int r = 0; r < U; r++)
#pragma unroll
        for (int c = 0; c < U; c++) acc[r][c] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BK) {
        const int kn = K - k0 < BK ? K - k0 : BK;
        // op(A) is k-major in memory when A is stored (K, M); op(B)[k][j] is B (K, N) row-major
        // (k-major over j) unless tB, where B is stored (N, K)
        stage<T>(As, A, tA, lda, i0, M, k0, kn, bf16);
        stage<T>(Bs, B, !tB, ldb, j0, N, k0, kn, bf16);
        __syncthreads();
        if (kn == BK) { // in order: the chain (a whole slice, unrolled)
#pragma unroll
            for (int k = 0; k < BK; k++) chain_step<T, U>(acc, As[k], Bs[k], tx, ty);
        } else {
            for (int k = 0; k < kn; k++) chain_step<T, U>(acc, As[k], Bs[k], tx, ty);
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < U; r++) {
        const int i = i0 + tile_at<T, U>(ty, r);
        if (i >= M) continue;
#pragma unroll
        for (int c = 0; c < U; c++) {
            const int j = j0 + tile_at<T, U>(tx, c);
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
                                            int ldc, int bf16, cudaStream_t stream, rp_error *err) {
    if (M < 0 || N < 0 || K < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: negative size (M %d, N %d, K %d)", M, N, K);
    if (ldc < N || (transA ? lda < M : lda < K) || (transB ? ldb < K : ldb < N))
        return RP_FAIL(err, RP_ERR_INVALID,
                       "invariant GEMM: leading dimension too small (M %d N %d K %d, transA %d lda %d, transB %d "
                       "ldb %d, ldc %d)", M, N, K, transA, lda, transB, ldb, ldc);
    if (M == 0 || N == 0) return RP_OK;
    if (K > 0 && (!A || !B)) return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: A or B is NULL with K %d", K);
    /* 128-tiles unless they would leave SMs idle (the bits are the same with either) */
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
                                                  cudaSuccess)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "invariant GEMM: no current device: %s",
                       cudaGetErrorString(cudaGetLastError()));
    const long long tiles128 = (long long)((M + 127) / 128) * ((N + 127) / 128);
    const int T = tiles128 < 2LL * sms ? 64 : 128;
    const dim3 grid((unsigned)((N + T - 1) / T), (unsigned)((M + T - 1) / T));
    if (grid.y > 65535u)
        return RP_FAIL(err, RP_ERR_INVALID, "invariant GEMM: M %d needs more than 65535 row tiles", M);
    if (T == 64)
        invariant_kernel<64><<<grid, THREADS, 0, stream>>>(transA != 0, transB != 0, M, N, K, alpha, A, lda, B, ldb,
                                                           beta, C, ldc, bf16 != 0);
    else
        invariant_kernel<128><<<grid, THREADS, 0, stream>>>(transA != 0, transB != 0, M, N, K, alpha, A, lda, B, ldb,
                                                            beta, C, ldc, bf16 != 0);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "invariant GEMM: launch: %s", cudaGetErrorString(e));
    return RP_OK;
}
