// attention_canonical.cu — rp_cuda_attention_canonical (cuda_attention.h): the layout-invariant
// attention of numerics invariant (engine/attention/canonical.c) on the device, bit for bit
// the CPU's rp_attention_canonical for the same inputs.
//
// The contract is the CPU's (docs/invariant.md): per (batch, head) the keys are cut into
// canonical blocks, segment by segment (a split segment of n keys into blocks of
// Bk(n) = max(1, min(64, 2^v2(n) / 8)); a whole one into blocks of 64 from its start, the last
// shorter); each block gives every query row a partial, and the partials fold left to right
// in block order. Per row and block, each value is this sequence of IEEE fp32 operations:
//   s_j  = fma chain over d = 0 .. D-1 of q[d] k_j[d], from +0     (then s_j * scale, masked -> -Inf)
//   m_b  = the max of the s_j in the CPU's 8 lanes (rp_attn_rowmax: x > m ? x : m)
//   p_j  = rp_expf(s_j - m_b); l_b = the lane sums (key j in lane j mod 8) as
//          ((0+1)+(2+3))+((4+5)+(6+7)) (rp_attn_exp_sum); m_b = -Inf: every p_j and l_b 0
//   O_b[d] = fma chain over the block's keys j of p_j v_j[d], from +0  (bf16: p_j rounded first)
//   fold: the first block is copied; then m' = max(m, m_b) (m_b > m ? m_b : m),
//         a = rp_expf(m - m'), c = rp_expf(m_b - m') ((1, 0) when m' = -Inf),
//         l = a l + c l_b, O = a O + c O_b (products and sum rounded apart)
//   out = O / l, or zeros when l == 0
// with bf16 rounding q, k, v (and p, after l_b) as the CPU does. Every operation is an explicit
// round-to-nearest intrinsic (__fmaf_rn, __fmul_rn, __fadd_rn, __fdiv_rn), so nvcc cannot contract
// or reorder any of them; rp_cuda_expf is rp_expf operation for operation (cuda_common.h).
//
// Work: one thread block of 256 threads per (tile of QR query rows, (b, h)); per canonical block,
// three phases separated by barriers: the scores (a thread per 4 rows x 2 keys), the row
// statistics (8 threads per row, thread q holding the CPU's lane q: the keys j = q mod 8, and
// lane 0 the max's tail; the lanes combined through shuffles in the CPU's order), and P V with
// the fold (a thread per 4 rows x 4 d strided by D/4, or 4 rows x 1 d when D is not a multiple
// of 4). q, the scores and the running O sit in shared memory; a block's keys and values are
// staged there too when D <= 128 (keys at a row stride of D + 1 against bank conflicts) and the device's shared
// memory takes it (32 rows a block, else 16 or 8), else read from global memory (8 rows). Speed
// only: no tiling changes any value's sequence of operations.
#include <cuda_runtime.h>

#include <math.h>

#include "engine/cuda/cuda_attention.h"
#include "engine/cuda/cuda_common.h"

namespace {

constexpr int THREADS = 256;
constexpr int BK_MAX = 64;       // canonical.c's BK_MAX: a block holds at most 64 keys
constexpr int STAGE_MAX_D = 128; // K and V blocks staged in shared memory up to this head dim

struct segs {
    int n, nsplit;
    int len[RP_CUDA_CANON_MAX_SEG];
};

// canonical.c's rp_attn_canon_block
__device__ __forceinline__ int canon_block(int n) {
    if (n <= 0) return 1;
    const int b = (n & -n) / 8;
    return b < 1 ? 1 : (b > BK_MAX ? BK_MAX : b);
}

__device__ __forceinline__ float maybe_bf16(float x, int bf16) { return bf16 ? rp_cuda_bf16_round(x) : x; }

constexpr int RT = 4;  // rows of a thread's micro-tile (scores and P V)
constexpr int KT = 2;  // keys of a thread's score micro-tile
constexpr int LANES = 8; // the CPU's lanes of a row's max and sum (rp_attn_rowmax, rp_attn_exp_sum)

// Shared memory layout (floats): q (QR, D + 1) | S (QR, BK_MAX + 1) | O (QR, D) | m, l, a, c (QR)
// | [K (BK_MAX, D + 1) | V (BK_MAX, D) when staged].
__host__ __device__ inline size_t smem_floats(int QR, int D, int staged) {
    return (size_t)QR * (D + 1) + (size_t)QR * (BK_MAX + 1) + (size_t)QR * D + 4 * (size_t)QR +
           (staged ? (size_t)BK_MAX * (D + 1) + (size_t)BK_MAX * D : 0);
}

// The value of lane i of this thread's group of 8 (the threads of one row).
__device__ __forceinline__ float lane(float x, int i) { return __shfl_sync(0xffffffffu, x, i, LANES); }

__global__ void __launch_bounds__(THREADS)
canonical_kernel(float *__restrict__ out, const float *__restrict__ q, const float *__restrict__ k,
                 const float *__restrict__ v, const unsigned char *__restrict__ key_mask, int H, int Tq, int Tk,
                 int D, int QR, float scale, segs sg, int bf16, int staged) {
    extern __shared__ float sm[];
    const int bh = blockIdx.y, b = bh / H, r0 = blockIdx.x * QR;
    const int nr = Tq - r0 < QR ? Tq - r0 : QR;
    const int tid = threadIdx.x;
    const int LQ = D + 1, LS = BK_MAX + 1;       // row strides of q and S
    float *qs = sm;                              // (QR, D + 1)
    float *S = qs + (size_t)QR * LQ;             // (QR, BK_MAX + 1): scores, then p
    float *Os = S + (size_t)QR * LS;             // (QR, D): the running O
    float *mrow = Os + (size_t)QR * D, *lrow = mrow + QR, *arow = lrow + QR, *crow = arow + QR; // (QR) each
    float *Ks = crow + QR, *Vs = Ks + (size_t)BK_MAX * (D + 1); // (BK_MAX, D + 1), (BK_MAX, D) when staged
    const float *qb = q + ((size_t)bh * Tq + r0) * D;     // (nr, D)
    const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * D; // (Tk, D)
    const unsigned char *mb = key_mask ? key_mask + (size_t)b * Tk : nullptr; // (Tk)
    const int LK = staged ? D + 1 : D;           // the row stride of the keys read in phase 1
    const int round_kv = bf16 && !staged;        // staged keys and values are rounded as staged
    const int DT = D % 4 ? 1 : 4;                // d of a thread's P V micro-tile
    const int n_rg = (QR + RT - 1) / RT;         // row groups

    for (int e = tid; e < nr * D; e += THREADS) qs[(e / D) * LQ + e % D] = maybe_bf16(qb[e], bf16);
    if (tid < QR) {
        mrow[tid] = -INFINITY;
        lrow[tid] = 0.0f;
    }
    for (int e = tid; e < nr * D; e += THREADS) Os[e] = 0.0f;
    int first = 1;
    for (int s = 0, j0 = 0; s < sg.n; j0 += sg.len[s], s++) {
        const int bk = s >= sg.nsplit ? BK_MAX : canon_block(sg.len[s]);
        for (int c0 = 0; c0 < sg.len[s]; c0 += bk, first = 0) {
            const int n = sg.len[s] - c0 < bk ? sg.len[s] - c0 : bk, kj = j0 + c0; // the block: keys [kj, kj + n)
            const float *Kb, *Vb; // (n, LK) and (n, D), rounded when bf16 (staged: here; else as read)
            __syncthreads();      // the previous block's readers of Ks, Vs and S are done
            if (staged) {
                for (int e = tid; e < n * D; e += THREADS) {
                    Ks[(e / D) * LK + e % D] = maybe_bf16(kb[(size_t)kj * D + e], bf16);
                    Vs[e] = maybe_bf16(vb[(size_t)kj * D + e], bf16);
                }
                Kb = Ks;
                Vb = Vs;
            } else {
                Kb = kb + (size_t)kj * D;
                Vb = vb + (size_t)kj * D;
            }
            __syncthreads();
            // scores: a thread per RT rows x KT keys, each s an fma chain over d from +0
            for (int t = tid; t < n_rg * ((n + KT - 1) / KT); t += THREADS) {
                const int rg = t % n_rg, j = (t / n_rg) * KT;
                float acc[RT][KT];
#pragma unroll
                for (int u = 0; u < RT; u++)
#pragma unroll
                    for (int w = 0; w < KT; w++) acc[u][w] = 0.0f;
                const float *qr = qs + (size_t)rg * RT * LQ, *kr = Kb + (size_t)j * LK;
                const int kw = n - j < KT ? n - j : KT; // keys of this tile (the last may have 1)
                for (int d = 0; d < D; d++) {
                    float kv[KT];
#pragma unroll
                    for (int w = 0; w < KT; w++) kv[w] = w < kw ? maybe_bf16(kr[(size_t)w * LK + d], round_kv) : 0.0f;
#pragma unroll
                    for (int u = 0; u < RT; u++) {
                        const float qv = qr[u * LQ + d]; // rows past QR: never stored below
#pragma unroll
                        for (int w = 0; w < KT; w++) acc[u][w] = __fmaf_rn(qv, kv[w], acc[u][w]);
                    }
                }
#pragma unroll
                for (int u = 0; u < RT; u++) {
                    const int r = rg * RT + u;
                    if (r >= nr) continue;
#pragma unroll
                    for (int w = 0; w < KT; w++) {
                        if (w >= kw) continue;
                        const float sc = __fmul_rn(acc[u][w], scale);
                        S[r * LS + j + w] = (mb && !mb[kj + j + w]) ? -INFINITY : sc;
                    }
                }
            }
            __syncthreads();
            // row statistics: LANES threads per row; lane l holds keys j = l mod 8 in order
            for (int t = tid; t < ((QR + 3) / 4) * 4 * LANES; t += THREADS) { // whole warps
                const int r = t / LANES, l = t % LANES;
                const int live = r < nr;
                float *sr = S + (size_t)(live ? r : 0) * LS;
                const int n8 = n - n % 8;
                float m = -INFINITY; // rp_attn_rowmax's m8[l]: keys l, l + 8, .. < n8, then lane 0 the tail
                for (int j = l; j < n8; j += LANES) m = sr[j] > m ? sr[j] : m;
                if (l == 0)
                    for (int j = n8; j < n; j++) m = sr[j] > m ? sr[j] : m;
                float mbk = lane(m, 0);
                for (int i = 1; i < LANES; i++) {
                    const float mi = lane(m, i);
                    mbk = mi > mbk ? mi : mbk;
                }
                float part = 0.0f; // rp_attn_exp_sum's s8[l]: keys j = l mod 8, in order
                if (mbk == -INFINITY) {
                    if (live)
                        for (int j = l; j < n; j += LANES) sr[j] = 0.0f;
                } else {
                    for (int j = l; j < n; j += LANES) {
                        const float p = rp_cuda_expf(__fsub_rn(sr[j], mbk));
                        part = __fadd_rn(part, p);
                        if (live) sr[j] = bf16 ? rp_cuda_bf16_round(p) : p; // P V's input; l_b took the fp32 p
                    }
                }
                const float lb = __fadd_rn(__fadd_rn(__fadd_rn(lane(part, 0), lane(part, 1)),
                                                     __fadd_rn(lane(part, 2), lane(part, 3))),
                                           __fadd_rn(__fadd_rn(lane(part, 4), lane(part, 5)),
                                                     __fadd_rn(lane(part, 6), lane(part, 7))));
                if (!live || l) continue;
                if (first) { // the first block initialises the state (the CPU copies it)
                    mrow[r] = mbk;
                    lrow[r] = lb;
                } else {
                    const float mo = mrow[r], mn = mbk > mo ? mbk : mo;
                    const int empty = mn == -INFINITY;
                    const float a = empty ? 1.0f : rp_cuda_expf(__fsub_rn(mo, mn));
                    const float c = empty ? 0.0f : rp_cuda_expf(__fsub_rn(mbk, mn));
                    lrow[r] = __fadd_rn(__fmul_rn(a, lrow[r]), __fmul_rn(c, lb));
                    mrow[r] = mn;
                    arow[r] = a;
                    crow[r] = c;
                }
            }
            __syncthreads();
            // O_b = P V and the fold: a thread per RT rows x DT d (d = dg + x D/DT: a warp's lanes read
            // consecutive v), each O_b an fma chain over j from +0
            for (int t = tid; t < n_rg * (D / DT); t += THREADS) {
                const int ND = D / DT, dg = t % ND, rg = t / ND;
                float ob[RT][4];
#pragma unroll
                for (int u = 0; u < RT; u++)
#pragma unroll
                    for (int x = 0; x < 4; x++) ob[u][x] = 0.0f;
                const float *pr = S + (size_t)rg * RT * LS;
                for (int j = 0; j < n; j++) {
                    float vv[4];
#pragma unroll
                    for (int x = 0; x < 4; x++)
                        vv[x] = x < DT ? maybe_bf16(Vb[(size_t)j * D + dg + x * ND], round_kv) : 0.0f;
#pragma unroll
                    for (int u = 0; u < RT; u++) {
                        const float p = pr[u * LS + j]; // rows past nr: never stored below
#pragma unroll
                        for (int x = 0; x < 4; x++) ob[u][x] = __fmaf_rn(p, vv[x], ob[u][x]);
                    }
                }
#pragma unroll
                for (int u = 0; u < RT; u++) {
                    const int r = rg * RT + u;
                    if (r >= nr) continue;
#pragma unroll
                    for (int x = 0; x < 4; x++) {
                        if (x >= DT) continue;
                        float *o = Os + (size_t)r * D + dg + x * ND;
                        *o = first ? ob[u][x] : __fadd_rn(__fmul_rn(arow[r], *o), __fmul_rn(crow[r], ob[u][x]));
                    }
                }
            }
        }
    }
    __syncthreads();
    float *ob = out + ((size_t)bh * Tq + r0) * D; // (nr, D)
    for (int e = tid; e < nr * D; e += THREADS) {
        const float l = lrow[e / D];
        ob[e] = l == 0.0f ? 0.0f : __fdiv_rn(Os[e], l);
    }
}

}  // namespace

/* The checks and the launch shared by both entry points: rows = QR, staged as chosen. */
static rp_status canonical_run(float *out, const float *q, const float *k, const float *v,
                               const unsigned char *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                               const int *seg, int nseg, int nsplit, int bf16, int rows, int staged,
                               cudaStream_t stream, rp_error *err) {
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: B %d, H %d, D %d must be >= 1, Tq %d, Tk %d >= 0",
                       B, H, D, Tq, Tk);
    segs sg = {};
    if (!seg) {
        sg.n = sg.nsplit = 1;
        sg.len[0] = Tk;
    } else {
        if (nseg < 1 || nseg > RP_CUDA_CANON_MAX_SEG || nsplit < 0)
            return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: %d key segments (need 1..%d), %d split", nseg,
                           RP_CUDA_CANON_MAX_SEG, nsplit);
        long long sum = 0;
        for (int s = 0; s < nseg; s++) {
            if (seg[s] < 0)
                return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: key segment %d has length %d", s, seg[s]);
            sg.len[s] = seg[s];
            sum += seg[s];
        }
        if (sum != Tk)
            return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: key segments sum to %lld, not Tk = %d", sum, Tk);
        sg.n = nseg;
        sg.nsplit = nsplit;
    }
    if (rows != 8 && rows != 16 && rows != 32)
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: %d query rows a block (8, 16 or 32)", rows);
    if (staged && D > STAGE_MAX_D)
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: keys staged in shared memory only up to head dim "
                       "%d (got %d)", STAGE_MAX_D, D);
    if (Tq == 0) return RP_OK;
    if (!out || !q || (Tk > 0 && (!k || !v)))
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: a NULL tensor (out %p, q %p, k %p, v %p)",
                       (void *)out, (const void *)q, (const void *)k, (const void *)v);
    if ((long long)B * H > 65535)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "canonical attention: B x H = %lld (b, h) pairs, more than a grid's "
                       "65535", (long long)B * H);
    const size_t bytes = sizeof(float) * smem_floats(rows, D, staged);
    int dev = 0, optin = 0;
    RP_CUDA_TRY(err, cudaGetDevice(&dev));
    RP_CUDA_TRY(err, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes > (size_t)optin)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "canonical attention: head dim %d with %d rows a block%s needs %zu "
                       "bytes of shared memory per block, the device allows %d", D, rows,
                       staged ? " and the keys staged" : "", bytes, optin);
    RP_CUDA_TRY(err, cudaFuncSetAttribute(canonical_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    const dim3 grid((unsigned)((Tq + rows - 1) / rows), (unsigned)(B * H));
    RP_CUDA_LAUNCHED(err, (canonical_kernel<<<grid, THREADS, bytes, stream>>>(out, q, k, v, key_mask, H, Tq, Tk, D,
                                                                            rows, scale, sg, bf16 != 0, staged)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_attention_canonical(float *out, const float *q, const float *k, const float *v,
                                                 const unsigned char *key_mask, int B, int H, int Tq, int Tk, int D,
                                                 float scale, const int *seg, int nseg, int nsplit, int bf16,
                                                 cudaStream_t stream, rp_error *err) {
    /* the largest tiling this device's shared memory takes (H100 / H200: 32 rows, keys staged,
     * up to D 128); the bits are the same with any */
    int dev = 0, optin = 0;
    RP_CUDA_TRY(err, cudaGetDevice(&dev));
    RP_CUDA_TRY(err, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    int rows = 32, staged = D <= STAGE_MAX_D;
    while (staged && rows > 8 && sizeof(float) * smem_floats(rows, D, 1) > (size_t)optin) rows /= 2;
    if (staged && sizeof(float) * smem_floats(rows, D, 1) > (size_t)optin) staged = 0;
    if (!staged) rows = 8;
    return canonical_run(out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, bf16, rows, staged, stream,
                         err);
}

extern "C" rp_status rp_cuda_attention_canonical_tiled(float *out, const float *q, const float *k, const float *v,
                                                       const unsigned char *key_mask, int B, int H, int Tq, int Tk,
                                                       int D, float scale, const int *seg, int nseg, int nsplit,
                                                       int bf16, int rows, int staged, cudaStream_t stream,
                                                       rp_error *err) {
    return canonical_run(out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, bf16, rows, staged, stream,
                         err);
}
