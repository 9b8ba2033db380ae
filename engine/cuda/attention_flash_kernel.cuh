// attention_flash_kernel.cuh — the FlashAttention-2 forward kernel on CUDA cores and its
// launchers (rp_flash::launch_tiles<NG, T>), included by attention_flash.cu (plan, run, the
// dispatch over NG and the input type) and attention_flash_inst.cu (one (NG, T) set of the
// kernels per translation unit: the 72 kernels in one unit took 183 s of one core to compile,
// most of a 2-core CI build; eight units compile side by side). CPU twin: engine/attention/flash.c.
//
// cuda_attention.h; the CPU twin is engine/attention/flash.c).
//
// Kernel design. One thread block owns BQ query rows of one (b, h) and walks the
// key/value tiles of BK keys in key order; 2*BQ threads (BQ = 32/64/128 -> 64/128/256).
// Thread t = 8*ty + tx (tx = 0..7, ty = 0..BQ/4-1) owns the 4 query rows
// ty + (BQ/4)*i (i = 0..3) in both phases, so the running max m, sum l and the output
// accumulator of a row live in registers of the 8 threads with the same ty: 8
// consecutive lanes of one warp, which combine row statistics with 3 xor-shuffles.
//   scores   S (BQ x BK) = Q K^T from shared memory: the thread computes its 4 rows x
//            the keys tx + 8*j (j < BK/8), FMA chains over d = 0..D-1 in order; Q and K
//            are read as float4 along d with a row stride DQ = D or D + 4 (DQ = 4 mod 8
//            floats) so the 8 key rows / 4 query rows a warp reads hit distinct banks.
//            Then s = fl(acc * scale), -Inf for a masked or past-the-end key.
//   softmax  rowmax over the thread's keys, then across the 8 lanes; m' = max(m, ...);
//            p = rp_expf(s - m'); the thread's keys are exactly the CPU lane tx (key j in
//            lane j mod 8), summed in key order, and the xor 1, 2, 4 butterfly adds them
//            ((0+1)+(2+3))+((4+5)+(6+7)) as rows.c does. alpha = rp_expf(m - m'),
//            l = fl(fl(alpha l) + rowsum), O = fl(alpha O). A row with nothing but
//            masked keys so far (m' = -Inf) keeps m, l, O and gets p = 0.
//   P V      P goes to shared memory (over the K tile, which is dead by then); each
//            thread accumulates its 4 rows x the columns 4*tx + 32*g + (0..3)
//            (g < NG = ceil(D/32)), FMA chains over the tile's keys in order. V's columns
//            D..32*NG-1 are zero in shared memory (so D = 72 runs as 96 in this phase).
//   end      out = fl(O * fl(1 / l)); l == 0 -> zeros.
// Shared memory (floats): Q BQ*DQ + V BK*32NG + max(K BK*DQ, P BQ*(BK+4)); e.g. 51200 B
// for D = 64 and 64 x 64 tiles (4 blocks per SM on an H100/H200), 100352 B for D = 128.
// Loads are plain (global -> registers -> shared), four __syncthreads per key tile; the
// other resident blocks hide the latency. Registers: 4*BK/8 scores + 16*NG accumulators;
// ptxas (sm_90, CUDA 13) gives 128 per thread for D <= 96 with 64 x 64 tiles (4 blocks of
// 128 threads per SM) and 168 for D = 128; no spills in any of the 72 kernels.
//
// Determinism: each output element is produced by one thread through a sequence of
// operations fixed by (D, Tk, BQ, BK) alone: the key tiles in order, each dot product
// in index order, each cross-lane combination a fixed butterfly; no atomics, no split
// of the keys across blocks. Same inputs -> same bits, whatever the scheduling.
#ifndef RP_ATTENTION_FLASH_KERNEL_CUH
#define RP_ATTENTION_FLASH_KERNEL_CUH
#define RP_CUDA_ATTN_INTERNAL 1
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "cuda_attention.h"
#include "cuda_common.h"

namespace rp_flash {

struct FlashArgs {
    const void *q, *k, *v;       // (B, H, Tq, D), (B, H, Tk, D) x2: float or bf16 bits
    float *out;                  // (B, H, Tq, D)
    const unsigned char *mask;   // (B, Tk) or nullptr
    int H, Tq, Tk, D, nqt;       // nqt = ceil(Tq / BQ)
    float scale;
};

static __device__ __forceinline__ float4 load4(const float *p) { return *reinterpret_cast<const float4 *>(p); }

static __device__ __forceinline__ float4 load4(const uint16_t *p) {
    const uint2 u = *reinterpret_cast<const uint2 *>(p);  // 4 bf16, little-endian
    return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                       __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}

static __device__ __forceinline__ float4 sload4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
static __device__ __forceinline__ void sstore4(float *p, float4 x) { *reinterpret_cast<float4 *>(p) = x; }

static __device__ __forceinline__ float fmax_skip(float a, float b) { return a > b ? a : b; }  // CPU's compare

// Row stride of Q and K in shared memory: >= D, a multiple of 4 and 4 mod 8.
static __host__ __device__ __forceinline__ int flash_dq(int D) { return (D % 8 == 4) ? D : D + 4; }

static __host__ __device__ __forceinline__ int flash_smem_floats(int D, int BQ, int BK) {
    const int dq = flash_dq(D), ng = (D + 31) / 32;
    const int kf = BK * dq, pf = BQ * (BK + 4);
    return BQ * dq + BK * 32 * ng + (kf > pf ? kf : pf);
}

template <int NG, int BQ, int BK, typename T>
__global__ void __launch_bounds__(2 * BQ) flash_fwd_kernel(const FlashArgs a) {
    constexpr int NT = 2 * BQ;   // threads
    constexpr int RG = BQ / 4;   // distance between a thread's rows
    constexpr int KJ = BK / 8;   // keys per thread per tile
    constexpr int VP = 32 * NG;  // V row stride in shared memory
    constexpr int PP = BK + 4;   // P row stride in shared memory
    const int D = a.D, D4 = D / 4, DQ = flash_dq(D);

    extern __shared__ float4 smem4[];
    float *Qs = reinterpret_cast<float *>(smem4);  // (BQ, DQ)
    float *Vs = Qs + BQ * DQ;                      // (BK, VP)
    float *Ks = Vs + BK * VP;                      // (BK, DQ), then P (BQ, PP)
    float *Ps = Ks;

    const int tid = threadIdx.x, tx = tid & 7, ty = tid >> 3;
    const int qt = (int)(blockIdx.x % (unsigned)a.nqt);
    const size_t bh = blockIdx.x / (unsigned)a.nqt;
    const int q0 = qt * BQ, Tq = a.Tq, Tk = a.Tk;
    const int b = (int)(bh / (size_t)a.H);
    const T *qg = static_cast<const T *>(a.q) + (bh * Tq + q0) * D;  // (BQ rows, D)
    const T *kg = static_cast<const T *>(a.k) + bh * Tk * D;         // (Tk, D)
    const T *vg = static_cast<const T *>(a.v) + bh * Tk * D;         // (Tk, D)
    const unsigned char *mk = a.mask ? a.mask + (size_t)b * Tk : nullptr;  // (Tk)

    // Q tile (rows past Tq are zeros; their outputs are never stored)
    for (int idx = tid; idx < BQ * D4; idx += NT) {
        const int r = idx / D4, c = (idx - r * D4) * 4;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (q0 + r < Tq) x = load4(qg + (size_t)r * D + c);
        sstore4(Qs + r * DQ + c, x);
    }
    // V columns D..VP-1: zero once (the tile loads write columns < D only)
    if (D < VP) {
        const int pad4 = (VP - D) / 4;
        for (int idx = tid; idx < BK * pad4; idx += NT) {
            const int r = idx / pad4, c = D + (idx - r * pad4) * 4;
            sstore4(Vs + r * VP + c, make_float4(0.f, 0.f, 0.f, 0.f));
        }
    }

    float o[4][4 * NG];  // row i, column 4*tx + 32*g + e at [i][4*g + e]
    float m[4], l[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        m[i] = -INFINITY;
        l[i] = 0.f;
#pragma unroll
        for (int c = 0; c < 4 * NG; c++) o[i][c] = 0.f;
    }

    const int ntiles = (Tk + BK - 1) / BK;
    for (int t = 0; t < ntiles; t++) {
        const int j0 = t * BK;
        if (t > 0) __syncthreads();  // the previous tile's P V is done with Ps (= Ks) and Vs
        for (int idx = tid; idx < BK * D4; idx += NT) {
            const int r = idx / D4, c = (idx - r * D4) * 4;
            float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;  // past the end: zeros (finite)
            if (j0 + r < Tk) {
                kx = load4(kg + (size_t)(j0 + r) * D + c);
                vx = load4(vg + (size_t)(j0 + r) * D + c);
            }
            sstore4(Ks + r * DQ + c, kx);
            sstore4(Vs + r * VP + c, vx);
        }
        __syncthreads();

        // S = Q K^T for rows ty + RG*i, keys tx + 8*j
        float acc[4][KJ];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < KJ; j++) acc[i][j] = 0.f;
#pragma unroll 1
        for (int d = 0; d < D; d += 4) {
            float4 qv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) qv[i] = sload4(Qs + (ty + RG * i) * DQ + d);
#pragma unroll
            for (int j = 0; j < KJ; j++) {
                const float4 kv = sload4(Ks + (tx + 8 * j) * DQ + d);
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float s = acc[i][j];
                    s = fmaf(qv[i].x, kv.x, s);
                    s = fmaf(qv[i].y, kv.y, s);
                    s = fmaf(qv[i].z, kv.z, s);
                    s = fmaf(qv[i].w, kv.w, s);
                    acc[i][j] = s;
                }
            }
        }

        // online softmax; acc becomes P
        bool valid[KJ];
#pragma unroll
        for (int j = 0; j < KJ; j++) {
            const int col = j0 + tx + 8 * j;
            valid[j] = col < Tk && (!mk || mk[col]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float tm = -INFINITY;
#pragma unroll
            for (int j = 0; j < KJ; j++) {
                const float s = valid[j] ? __fmul_rn(acc[i][j], a.scale) : -INFINITY;
                acc[i][j] = s;
                tm = fmax_skip(s, tm);
            }
            tm = fmax_skip(__shfl_xor_sync(0xffffffffu, tm, 1), tm);
            tm = fmax_skip(__shfl_xor_sync(0xffffffffu, tm, 2), tm);
            tm = fmax_skip(__shfl_xor_sync(0xffffffffu, tm, 4), tm);
            const float mnew = fmax_skip(tm, m[i]);
            const bool live = mnew != -INFINITY;  // same in the row's 8 lanes
            float rs = 0.f;
#pragma unroll
            for (int j = 0; j < KJ; j++) {
                const float p = live ? rp_cuda_expf(__fsub_rn(acc[i][j], mnew)) : 0.f;
                acc[i][j] = p;
                rs = __fadd_rn(rs, p);
            }
            rs = __fadd_rn(rs, __shfl_xor_sync(0xffffffffu, rs, 1));
            rs = __fadd_rn(rs, __shfl_xor_sync(0xffffffffu, rs, 2));
            rs = __fadd_rn(rs, __shfl_xor_sync(0xffffffffu, rs, 4));
            if (live) {
                const float alpha = rp_cuda_expf(__fsub_rn(m[i], mnew));  // 0 on the first live tile
                l[i] = __fadd_rn(__fmul_rn(alpha, l[i]), rs);
#pragma unroll
                for (int c = 0; c < 4 * NG; c++) o[i][c] = __fmul_rn(o[i][c], alpha);
                m[i] = mnew;
            }
        }
        __syncthreads();  // every thread is done reading Ks: P may overwrite it
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < KJ; j++) Ps[(ty + RG * i) * PP + tx + 8 * j] = acc[i][j];
        __syncthreads();

        // O += P V over the tile's keys in order
#pragma unroll 1
        for (int jj = 0; jj < BK; jj += 4) {
            float4 pv[4];
#pragma unroll
            for (int i = 0; i < 4; i++) pv[i] = sload4(Ps + (ty + RG * i) * PP + jj);
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const float *vrow = Vs + (jj + u) * VP + 4 * tx;
#pragma unroll
                for (int g = 0; g < NG; g++) {
                    const float4 vv = sload4(vrow + 32 * g);
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const float p = u == 0 ? pv[i].x : u == 1 ? pv[i].y : u == 2 ? pv[i].z : pv[i].w;
                        o[i][4 * g + 0] = fmaf(p, vv.x, o[i][4 * g + 0]);
                        o[i][4 * g + 1] = fmaf(p, vv.y, o[i][4 * g + 1]);
                        o[i][4 * g + 2] = fmaf(p, vv.z, o[i][4 * g + 2]);
                        o[i][4 * g + 3] = fmaf(p, vv.w, o[i][4 * g + 3]);
                    }
                }
            }
        }
    }

    // out = O / l, once; every key masked (l == 0) -> zeros
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int row = q0 + ty + RG * i;
        if (row >= Tq) continue;
        const bool dead = l[i] == 0.f;
        const float inv = dead ? 0.f : __frcp_rn(l[i]);
        float *orow = a.out + (bh * Tq + row) * D;
#pragma unroll
        for (int g = 0; g < NG; g++) {
            const int c = 4 * tx + 32 * g;
            if (c >= D) continue;
            float4 r = make_float4(0.f, 0.f, 0.f, 0.f);
            if (!dead)
                r = make_float4(__fmul_rn(o[i][4 * g + 0], inv), __fmul_rn(o[i][4 * g + 1], inv),
                                __fmul_rn(o[i][4 * g + 2], inv), __fmul_rn(o[i][4 * g + 3], inv));
            *reinterpret_cast<float4 *>(orow + c) = r;
        }
    }
}

template <int NG, int BQ, int BK, typename T>
rp_status launch(cudaStream_t stream, const FlashArgs &args, unsigned grid, int smem, rp_error *err) {
    auto kern = flash_fwd_kernel<NG, BQ, BK, T>;
    if (smem > 48 * 1024)
        RP_CUDA_TRY(err, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    RP_CUDA_LAUNCHED(err, (kern<<<grid, 2 * BQ, (size_t)smem, stream>>>(args)));
    return RP_OK;
}

template <int NG, typename T>
rp_status launch_tiles(int BQ, int BK, cudaStream_t stream, const FlashArgs &args, unsigned grid, int smem,
                       rp_error *err) {
    switch (BQ * 1000 + BK) {
    case 32032: return launch<NG, 32, 32, T>(stream, args, grid, smem, err);
    case 32064: return launch<NG, 32, 64, T>(stream, args, grid, smem, err);
    case 32128: return launch<NG, 32, 128, T>(stream, args, grid, smem, err);
    case 64032: return launch<NG, 64, 32, T>(stream, args, grid, smem, err);
    case 64064: return launch<NG, 64, 64, T>(stream, args, grid, smem, err);
    case 64128: return launch<NG, 64, 128, T>(stream, args, grid, smem, err);
    case 128032: return launch<NG, 128, 32, T>(stream, args, grid, smem, err);
    case 128064: return launch<NG, 128, 64, T>(stream, args, grid, smem, err);
    case 128128: return launch<NG, 128, 128, T>(stream, args, grid, smem, err);
    default: break;
    }
    return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention: no kernel for tiles q%d x kv%d", BQ, BK);
}

// The (NG, T) sets, one per translation unit of attention_flash_inst.cu (CMakeLists.txt
// compiles it for these, repro_flash_<ng>_<t>: a set missing there fails the link); extern
// here so that no other unit instantiates (and compiles) them again.
#define RP_FLASH_INSTANCES(X) X(1, float) X(2, float) X(3, float) X(4, float) \
    X(1, uint16_t) X(2, uint16_t) X(3, uint16_t) X(4, uint16_t)
#define RP_FLASH_EXTERN(ng, t) \
    extern template rp_status launch_tiles<ng, t>(int, int, cudaStream_t, const FlashArgs &, unsigned, int, rp_error *);
RP_FLASH_INSTANCES(RP_FLASH_EXTERN)
#undef RP_FLASH_EXTERN

}  // namespace rp_flash

#endif
