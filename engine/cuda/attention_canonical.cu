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
// three phases separated by barriers: the scores (a thread per (row, key); the QR rows of a key
// share its k row: a broadcast), the row statistics and fold factors (a thread per row, in the
// CPU's lane order), and P V with the fold (a thread per (row, d): v rows read with d across the
// lanes). q, the scores and the running O sit in shared memory; a block's keys and values are
// staged there too when D <= 128, else read from global memory. Speed only: no phase or mapping
// changes any value's sequence of operations.
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

// Shared memory layout (floats): q (QR, D + 1) | S (QR, BK_MAX + 1) | O (QR, D) | m, l, a, c (QR)
// | [K (BK_MAX, D) | V (BK_MAX, D) when staged].
__host__ __device__ inline size_t smem_floats(int QR, int D, int staged) {
    return (size_t)QR * (D + 1) + (size_t)QR * (BK_MAX + 1) + (size_t)QR * D + 4 * (size_t)QR +
           (staged ? 2 * (size_t)BK_MAX * D : 0);
}

__global__ void __launch_bounds__(THREADS)
canonical_kernel(float *__restrict__ out, const float *__restrict__ q, const float *__restrict__ k,
                 const float *__restrict__ v, const unsigned char *__restrict__ key_mask, int H, int Tq, int Tk,
                 int D, int QR, float scale, segs sg, int bf16, int staged) {
    extern __shared__ float sm[];
    const int bh = blockIdx.y, b = bh / H, r0 = blockIdx.x * QR;
    const int nr = Tq - r0 < QR ? Tq - r0 : QR;
    const int tid = threadIdx.x;
    float *qs = sm;                              // (QR, D + 1)
    float *S = qs + (size_t)QR * (D + 1);        // (QR, BK_MAX + 1): scores, then p
    float *Os = S + (size_t)QR * (BK_MAX + 1);   // (QR, D): the running O
    float *mrow = Os + (size_t)QR * D, *lrow = mrow + QR, *arow = lrow + QR, *crow = arow + QR; // (QR) each
    float *Ks = crow + QR, *Vs = Ks + (size_t)BK_MAX * D; // (BK_MAX, D) each, when staged
    const float *qb = q + ((size_t)bh * Tq + r0) * D;     // (nr, D)
    const float *kb = k + (size_t)bh * Tk * D, *vb = v + (size_t)bh * Tk * D; // (Tk, D)
    const unsigned char *mb = key_mask ? key_mask + (size_t)b * Tk : nullptr; // (Tk)

    for (int e = tid; e < nr * D; e += THREADS) qs[(e / D) * (D + 1) + e % D] = maybe_bf16(qb[e], bf16);
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
            const float *Kb, *Vb; // (n, D), rounded when bf16 (staged: here; else as read)
            __syncthreads();      // the previous block's readers of Ks, Vs and S are done
            if (staged) {
                for (int e = tid; e < n * D; e += THREADS) {
                    Ks[e] = maybe_bf16(kb[(size_t)kj * D + e], bf16);
                    Vs[e] = maybe_bf16(vb[(size_t)kj * D + e], bf16);
                }
                Kb = Ks;
                Vb = Vs;
            } else {
                Kb = kb + (size_t)kj * D;
                Vb = vb + (size_t)kj * D;
            }
            const int round_kv = bf16 && !staged;
            __syncthreads();
            // scores: thread (r, j), r fastest (the rows of a warp read one k row)
            for (int e = tid; e < QR * n; e += THREADS) {
                const int r = e % QR, j = e / QR;
                if (r >= nr) continue;
                const float *qr = qs + r * (D + 1), *kr = Kb + (size_t)j * D;
                float acc = 0.0f;
                for (int d = 0; d < D; d++) acc = __fmaf_rn(qr[d], maybe_bf16(kr[d], round_kv), acc);
                acc = __fmul_rn(acc, scale);
                S[r * (BK_MAX + 1) + j] = (mb && !mb[kj + j]) ? -INFINITY : acc;
            }
            __syncthreads();
            // row statistics, p in place, the fold's factors: one thread per row
            if (tid < nr) {
                float *sr = S + tid * (BK_MAX + 1);
                float m8[8];
                for (int l = 0; l < 8; l++) m8[l] = -INFINITY;
                int j = 0;
                for (; j + 8 <= n; j += 8)
                    for (int l = 0; l < 8; l++) m8[l] = sr[j + l] > m8[l] ? sr[j + l] : m8[l];
                for (; j < n; j++) m8[0] = sr[j] > m8[0] ? sr[j] : m8[0];
                float mbk = m8[0];
                for (int l = 1; l < 8; l++) mbk = m8[l] > mbk ? m8[l] : mbk;
                float lb = 0.0f;
                if (mbk == -INFINITY) {
                    for (j = 0; j < n; j++) sr[j] = 0.0f;
                } else {
                    float s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                    for (j = 0; j < n; j++) sr[j] = rp_cuda_expf(__fsub_rn(sr[j], mbk));
                    for (j = 0; j + 8 <= n; j += 8)
                        for (int l = 0; l < 8; l++) s8[l] = __fadd_rn(s8[l], sr[j + l]);
                    for (; j < n; j++) s8[j & 7] = __fadd_rn(s8[j & 7], sr[j]);
                    lb = __fadd_rn(__fadd_rn(__fadd_rn(s8[0], s8[1]), __fadd_rn(s8[2], s8[3])),
                                   __fadd_rn(__fadd_rn(s8[4], s8[5]), __fadd_rn(s8[6], s8[7])));
                }
                if (bf16)
                    for (j = 0; j < n; j++) sr[j] = rp_cuda_bf16_round(sr[j]);
                if (first) { // the first block initialises the state (the CPU copies it)
                    mrow[tid] = mbk;
                    lrow[tid] = lb;
                } else {
                    const float m = mrow[tid], mn = mbk > m ? mbk : m;
                    const int empty = mn == -INFINITY;
                    const float a = empty ? 1.0f : rp_cuda_expf(__fsub_rn(m, mn));
                    const float c = empty ? 0.0f : rp_cuda_expf(__fsub_rn(mbk, mn));
                    lrow[tid] = __fadd_rn(__fmul_rn(a, lrow[tid]), __fmul_rn(c, lb));
                    mrow[tid] = mn;
                    arow[tid] = a;
                    crow[tid] = c;
                }
            }
            __syncthreads();
            // O_b = P V and the fold: thread (r, d), d fastest
            for (int e = tid; e < nr * D; e += THREADS) {
                const int r = e / D, d = e % D;
                const float *pr = S + r * (BK_MAX + 1);
                float ob = 0.0f;
                for (int j = 0; j < n; j++) ob = __fmaf_rn(pr[j], maybe_bf16(Vb[(size_t)j * D + d], round_kv), ob);
                Os[e] = first ? ob : __fadd_rn(__fmul_rn(arow[r], Os[e]), __fmul_rn(crow[r], ob));
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

extern "C" rp_status rp_cuda_attention_canonical(float *out, const float *q, const float *k, const float *v,
                                                 const unsigned char *key_mask, int B, int H, int Tq, int Tk, int D,
                                                 float scale, const int *seg, int nseg, int nsplit, int bf16,
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
    if (Tq == 0) return RP_OK;
    if (!out || !q || (Tk > 0 && (!k || !v)))
        return RP_FAIL(err, RP_ERR_INVALID, "canonical attention: a NULL tensor (out %p, q %p, k %p, v %p)",
                       (void *)out, (const void *)q, (const void *)k, (const void *)v);
    if ((long long)B * H > 65535)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "canonical attention: B x H = %lld (b, h) pairs, more than a grid's "
                       "65535", (long long)B * H);
    const int QR = D <= STAGE_MAX_D ? 32 : 8, staged = D <= STAGE_MAX_D;
    const size_t bytes = sizeof(float) * smem_floats(QR, D, staged);
    int dev = 0, optin = 0;
    RP_CUDA_TRY(err, cudaGetDevice(&dev));
    RP_CUDA_TRY(err, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes > (size_t)optin)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "canonical attention: head dim %d needs %zu bytes of shared memory "
                       "per block, the device allows %d", D, bytes, optin);
    RP_CUDA_TRY(err, cudaFuncSetAttribute(canonical_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    const dim3 grid((unsigned)((Tq + QR - 1) / QR), (unsigned)(B * H));
    RP_CUDA_LAUNCHED(err, (canonical_kernel<<<grid, THREADS, bytes, stream>>>(out, q, k, v, key_mask, H, Tq, Tk, D,
                                                                            QR, scale, sg, bf16 != 0, staged)));
    return RP_OK;
}
