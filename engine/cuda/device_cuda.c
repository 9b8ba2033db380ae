/* device_cuda.c — the "cuda" device (device_cuda.h): the op table of engine/device.h
 * over engine/cuda/. Each op launches on the device's one stream and records the
 * first failure as the device's sticky error (device.h); nothing synchronises except
 * download, sync and release.
 *
 * Numerics: the kernels' (cuda_ops.h: elementwise ops bitwise the CPU's, reductions in
 * double, fixed order); GEMMs through cuBLASLt in the device's precision and mode
 * (cuda_gemm.h); ctx->precision is a CPU knob (the GPU's precision is the device's);
 * ctx->reduce_split splits every GEMM's K in two calls (gemm_any), the classifier's
 * rounding twin on a GPU; cuBLASLt's own split-K choice is in the algorithm notes.
 * Attention: math / split / flash as the ctx asks (cuda_attention.h), sub-quadratic
 * has no CUDA kernel (an error naming it), auto picks as PyTorch's SDPA does on a GPU
 * (choose_auto below). Attention inputs stay fp32 in every precision: the
 * bf16 and fp16 modes round the GEMM operands only (say so when comparing with a
 * framework that runs attention in half precision).
 * Numerics invariant (ctx->numerics): every GEMM is rp_cuda_gemm_invariant and the attention
 * the canonical kernel (rp_cuda_attention_canonical), both the CPU's bits; ctx->precision
 * bf16 rounds their inputs as the CPU does. The other kernels are per row or per item
 * already, so a layout cannot move their bits. */
#ifdef REPRO_HAVE_CUDA

#include "device_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "engine/cuda/cublas_load.h"
#include "engine/cuda/cuda_attention.h"
#include "engine/cuda/cuda_info.h"
#include "engine/cuda/cuda_ops.h"
#include "engine/trace.h"

typedef struct cuda_dev {
    rp_device base; /* first */
    int ordinal;
    rp_cuda_device_info info;
    rp_cuda_prec prec;
    rp_cuda_gemm_mode mode;
    rp_cuda_gemm_ctx *gemm;
    cudaStream_t stream; /* the gemm ctx's */
    cublasHandle_t blas; /* conv2d's im2col GEMMs */
    rp_cuda_attn *attn;
    void *conv_ws;
    size_t conv_ws_bytes;
    char auto_reason[320];
    /* freed blocks kept for reuse (a forward allocates the same sizes every call, and
     * cudaFree synchronises the whole device): exact-size matches, stream-ordered reuse
     * (one stream), released at destroy */
    struct cached_block {
        void *p;
        size_t bytes;
    } cache[32];
    int n_cache;
    struct cached_block live[256]; /* sizes of the blocks handed out (for release) */
    int n_live;
} cuda_dev;

#define CD ((cuda_dev *)d)
/* Runs an rp_cuda_* call returning rp_status; records its failure. */
#define RUN(call)                                                                                              \
    do {                                                                                                       \
        rp_error e_;                                                                                           \
        rp_error_clear(&e_);                                                                                   \
        rp_error *err = &e_;                                                                                   \
        rp_status s_ = (call);                                                                                 \
        if (s_ != RP_OK) rp_device_fail(d, s_, &e_);                                                          \
    } while (0)
/* Runs a CUDA runtime call; records its failure. */
#define CU(call)                                                                                               \
    do {                                                                                                       \
        cudaError_t c_ = (call);                                                                               \
        if (c_ != cudaSuccess) {                                                                               \
            rp_error e_;                                                                                       \
            rp_error_clear(&e_);                                                                               \
            RP_FAIL(&e_, c_ == cudaErrorMemoryAllocation ? RP_ERR_NOMEM : RP_ERR_UNSUPPORTED, "%s: %s: %s",     \
                    d->name, #call, cudaGetErrorString(c_));                                                   \
            rp_device_fail(d, e_.code, &e_);                                                                   \
        }                                                                                                      \
    } while (0)

/* ---- memory ------------------------------------------------------------------------------ */

static void *cd_alloc(rp_device *d, size_t bytes) {
    cuda_dev *c = CD;
    void *p = NULL;
    for (int i = 0; i < c->n_cache; i++)
        if (c->cache[i].bytes == bytes) {
            p = c->cache[i].p;
            c->cache[i] = c->cache[--c->n_cache];
            break;
        }
    if (!p && cudaMalloc(&p, bytes) != cudaSuccess) {
        /* give the cache back and try once more */
        cudaStreamSynchronize(c->stream);
        for (int i = 0; i < c->n_cache; i++) cudaFree(c->cache[i].p);
        c->n_cache = 0;
        (void)cudaGetLastError();
        if (cudaMalloc(&p, bytes) != cudaSuccess) {
            (void)cudaGetLastError();
            return NULL;
        }
    }
    if (c->n_live < (int)(sizeof c->live / sizeof *c->live)) c->live[c->n_live++] = (struct cached_block){p, bytes};
    return p;
}

static void cd_release(rp_device *d, void *p) {
    cuda_dev *c = CD;
    for (int i = 0; i < c->n_live; i++)
        if (c->live[i].p == p) {
            struct cached_block b = c->live[i];
            rp_cuda_gemm_forget_const(c->gemm, b.p, b.bytes); /* its contents may change from now on */
            c->live[i] = c->live[--c->n_live];
            if (c->n_cache < (int)(sizeof c->cache / sizeof *c->cache)) {
                c->cache[c->n_cache++] = b; /* later work on the one stream orders after earlier uses */
                return;
            }
            break;
        }
    CU(cudaFree(p));
}
static void cd_upload(rp_device *d, void *dst, const void *src, size_t n) {
    CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, CD->stream));
}
static void cd_download(rp_device *d, void *dst, const void *src, size_t n) {
    CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, CD->stream));
    CU(cudaStreamSynchronize(CD->stream));
}
static void cd_copy(rp_device *d, void *dst, const void *src, size_t n) {
    CU(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, CD->stream));
}
static void cd_zero(rp_device *d, void *p, size_t n) { CU(cudaMemsetAsync(p, 0, n, CD->stream)); }
static void cd_sync(rp_device *d) { CU(cudaStreamSynchronize(CD->stream)); }

static void cd_destroy(rp_device *d) {
    cudaStreamSynchronize(CD->stream);
    for (int i = 0; i < CD->n_cache; i++) cudaFree(CD->cache[i].p);
    for (int i = 0; i < CD->n_live; i++) cudaFree(CD->live[i].p);
    rp_cuda_attn_destroy(CD->attn);
    if (CD->blas) cublasDestroy(CD->blas);
    cudaFree(CD->conv_ws);
    rp_cuda_gemm_destroy(CD->gemm); /* owns the stream */
    free(d);
}

/* ---- GEMM ------------------------------------------------------------------------------------ */

/* 1 when p lies in the device copy of a mirrored host block (device.h) */
static int in_mirror(const rp_device *d, const void *p) {
    const char *c = p;
    for (int i = 0; i < d->n_mirrors; i++) {
        const char *m = d->mirrors[i].dev;
        if (c >= m && c < m + d->mirrors[i].bytes) return 1;
    }
    return 0;
}

/* One GEMM (cuda_gemm.h semantics); const_b: B is mirrored weight memory (its 16-bit copy
 * is cached, rp_cuda_gemm_const). With ctx->reduce_split (the classifier's rounding twin)
 * the K reduction runs as two halves, C = (beta C + alpha P0) + alpha P1: a split-K order
 * on the GPU too, so a GPU reference's twin moves its rounding as the CPU's does (the
 * CPU adds the halves first, alpha (P0 + P1) + beta C; either is a split-K order). */
static void gemm_any(rp_device *d, int split, int tA, int tB, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc, int const_b) {
    if (split && K >= 2) {
        const int K0 = K / 2;
        const float *A1 = tA ? A + (size_t)K0 * lda : A + K0; /* op(A) columns K0.. */
        const float *B1 = tB ? B + K0 : B + (size_t)K0 * ldb; /* op(B) rows K0.. */
        gemm_any(d, 0, tA, tB, M, N, K0, alpha, A, lda, B, ldb, beta, C, ldc, const_b);
        gemm_any(d, 0, tA, tB, M, N, K - K0, alpha, A1, lda, B1, ldb, 1.0f, C, ldc, const_b);
        return;
    }
    if (const_b) RUN(rp_cuda_gemm_const(CD->gemm, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, err));
    else RUN(rp_cuda_gemm(CD->gemm, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, err));
}

/* Under numerics invariant every GEMM is rp_cuda_gemm_invariant (the CPU's bits; bf16 as
 * ctx->precision asks, the host rule: rp_precision_for_host), never cuBLASLt; validation
 * refuses reduce_split with it. */
static int invariant(const rp_ctx *ctx) { return ctx->numerics == RP_NUMERICS_INVARIANT; }

static void gemm_invariant(rp_device *d, const rp_ctx *ctx, int tA, int tB, int M, int N, int K, float alpha,
                           const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    RUN(rp_cuda_gemm_invariant(tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                               ctx->precision == RP_PREC_BF16, CD->stream, err));
}

static void cd_gemm(rp_device *d, const rp_ctx *ctx, int tA, int tB, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    if (invariant(ctx)) gemm_invariant(d, ctx, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else gemm_any(d, ctx->reduce_split, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, in_mirror(d, B));
}

static void cd_linear(rp_device *d, const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w,
                      int M) {
    if (M <= 0) return;
    float beta = 0.0f;
    if (w->bias) {
        RUN(rp_cuda_fill_rows(out, ldo, w->bias, M, w->out, CD->stream, err));
        beta = 1.0f;
    }
    /* weights read through a mirror never change while mirrored: their 16-bit copy is
     * made once (rp_cuda_gemm_const; bitwise the per-call conversion) and dropped when
     * the block is released (cd_release) */
    if (invariant(ctx)) gemm_invariant(d, ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, ldo);
    else gemm_any(d, ctx->reduce_split, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, ldo,
                  in_mirror(d, w->weight));
}

/* ---- normalisation and elementwise --------------------------------------------------------------- */

static void cd_layernorm(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                         float eps) {
    if (N > 0) RUN(rp_cuda_layernorm(out, x, w, b, N, C, eps, CD->stream, err));
}
static void cd_rmsnorm(rp_device *d, float *out, const float *x, const float *w, int N, int C, float eps) {
    if (N > 0) RUN(rp_cuda_rmsnorm(out, x, w, N, C, eps, CD->stream, err));
}
static void cd_groupnorm(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                         int HW, int G, float eps) {
    RUN(rp_cuda_groupnorm(out, x, w, b, N, C, HW, G, eps, CD->stream, err));
}
static void cd_softmax_rows(rp_device *d, float *out, const float *x, int rows, int cols) {
    if (rows > 0) RUN(rp_cuda_softmax_rows(out, x, rows, cols, CD->stream, err));
}
static void cd_act(rp_device *d, rp_d_act a, float *out, int ldo, const float *x, int ldx, int rows, int cols) {
    const rp_cuda_act ca = a == RP_D_GELU_TANH ? RP_CUDA_ACT_GELU_TANH
                           : a == RP_D_GELU_ERF ? RP_CUDA_ACT_GELU_ERF
                                                : RP_CUDA_ACT_SILU;
    if (rows > 0 && cols > 0) RUN(rp_cuda_activation_2d(ca, out, ldo, x, ldx, rows, cols, CD->stream, err));
}
static void cd_modulate(rp_device *d, float *x, const float *shift, const float *scale, int ms, int B, int T, int C) {
    if (B > 0 && T > 0) RUN(rp_cuda_modulate(x, shift, scale, ms, B, T, C, CD->stream, err));
}
static void cd_gated_add(rp_device *d, float *x, const float *gate, int ms, const float *y, int B, int T, int C) {
    if (B > 0 && T > 0) RUN(rp_cuda_gated_add(x, gate, ms, y, B, T, C, CD->stream, err));
}
static void cd_add(rp_device *d, float *y, const float *x, size_t n) {
    if (n) RUN(rp_cuda_add(y, x, n, CD->stream, err));
}
static void cd_add_bcast(rp_device *d, float *y, const float *x, int B, size_t n) {
    if (B > 0 && n) RUN(rp_cuda_add_bcast(y, x, B, n, CD->stream, err));
}
static void cd_div_add(rp_device *d, float *out, const float *x, float div, float add, size_t n) {
    if (n) RUN(rp_cuda_div_add(out, x, div, add, n, CD->stream, err));
}
static void cd_rope(rp_device *d, float *x, const float *c, const float *s, int B, int NH, int T, int D) {
    if (T > 0) RUN(rp_cuda_rope(x, c, s, B, NH, T, D, CD->stream, err));
}

/* ---- layouts -------------------------------------------------------------------------------------- */

static void cd_patchify(rp_device *d, float *tok, const float *img, int B, int C, int H, int W, int p) {
    RUN(rp_cuda_patchify(tok, img, B, C, H, W, p, CD->stream, err));
}
static void cd_unpatchify(rp_device *d, float *img, const float *tok, int B, int C, int H, int W, int p) {
    RUN(rp_cuda_unpatchify(img, tok, B, C, H, W, p, CD->stream, err));
}
static void cd_flux_unpack(rp_device *d, float *img, const float *tok, int B, int C, int H, int W) {
    RUN(rp_cuda_flux_unpack(img, tok, B, C, H, W, CD->stream, err));
}
static void cd_upsample2x(rp_device *d, float *out, const float *in, int N, int C, int H, int W) {
    RUN(rp_cuda_upsample_nearest2x(out, in, N, C, H, W, CD->stream, err));
}
static void cd_split_qkv(rp_device *d, float *q, float *k, float *v, const float *qkv, int B, int T, int H, int D) {
    if (T > 0) RUN(rp_cuda_split_qkv_heads(q, k, v, qkv, B, T, H, D, CD->stream, err));
}
static void cd_to_heads(rp_device *d, float *out, const float *x, int B, int T, int H, int D, int S, int s0) {
    if (T > 0) RUN(rp_cuda_to_heads(out, x, B, T, H, D, S, s0, CD->stream, err));
}
static void cd_from_heads(rp_device *d, float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                          int D) {
    if (T > 0) RUN(rp_cuda_from_heads(out, ldo, x, B, S, s0, T, H, D, CD->stream, err));
}
static void cd_transpose(rp_device *d, float *out, const float *x, int rows, int cols) {
    RUN(rp_cuda_transpose(out, x, rows, cols, CD->stream, err));
}
static void cd_add_transposed(rp_device *d, float *x, const float *y, int rows, int cols) {
    RUN(rp_cuda_add_transposed(x, y, rows, cols, CD->stream, err));
}
static void cd_timestep_embedding(rp_device *d, float *out, const float *t, int B, int dim, float max_period,
                                  float freq_shift) {
    RUN(rp_cuda_timestep_embedding(out, t, B, dim, max_period, freq_shift, CD->stream, err));
}

static void cd_conv2d(rp_device *d, const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b,
                      int N, int IC, int H, int W, int OC, int k, int s, int pad) {
    (void)ctx;
    const size_t need = rp_cuda_conv2d_workspace_bytes(IC, H, W, k, s, pad);
    if (need > CD->conv_ws_bytes) {
        CU(cudaStreamSynchronize(CD->stream));
        CU(cudaFree(CD->conv_ws));
        CD->conv_ws = NULL;
        CD->conv_ws_bytes = 0;
        if (d->status != RP_OK) return;
        CU(cudaMalloc(&CD->conv_ws, need));
        if (d->status != RP_OK) return;
        CD->conv_ws_bytes = need;
    }
    RUN(rp_cuda_conv2d(CD->blas, out, in, w, b, N, IC, H, W, OC, k, s, pad, CD->conv_ws, CD->conv_ws_bytes,
                       CD->stream, err));
}

/* ---- attention ------------------------------------------------------------------------------------ */

/* PyTorch 2.x SDPA's dispatch on a CUDA device, on this GPU: flash when the compute
 * capability is >= 8.0, D % 8 == 0, D <= 128 (our kernel's limit; PyTorch's is 256) and
 * there is no mask (its flash kernel takes none); else mem-efficient (cutlass, SM >= 5.0,
 * D % 4 == 0 for fp32), which is the same online-softmax order with its own tiles (64 x 64
 * for D <= 64, 32 x 128 above) — our flash kernel with those tiles; else math. *path names
 * the framework path ("sdpa-flash", "sdpa-mem-efficient", "sdpa-math"), as the CPU selector's
 * rp_attn_choice.backend does. */
static void choose_auto(cuda_dev *c, int D, int masked, rp_cuda_attn_variant *v, rp_cuda_attn_opts *o,
                        const char **path) {
    memset(o, 0, sizeof *o);
    const int cc = c->info.cc_major * 10 + c->info.cc_minor;
    if (cc >= 80 && D % 8 == 0 && D <= RP_CUDA_ATTN_FLASH_MAX_D && !masked) {
        *v = RP_CUDA_ATTN_FLASH;
        *path = "sdpa-flash";
        o->q_chunk = D <= 64 ? 128 : 64;
        o->kv_chunk = 64;
        rp_cuda_attn_used u;
        rp_error e;
        if (rp_cuda_attn_plan(c->attn, *v, o, D, &u, &e) != RP_OK) o->q_chunk = o->kv_chunk = 0; /* defaults */
        snprintf(c->auto_reason, sizeof c->auto_reason,
                 "sdpa-flash: sm_%d >= 80, head dim %d %% 8 == 0 and <= %d, no mask", cc, D,
                 RP_CUDA_ATTN_FLASH_MAX_D);
    } else if (cc >= 50 && D % 4 == 0 && D <= RP_CUDA_ATTN_FLASH_MAX_D) {
        *v = RP_CUDA_ATTN_FLASH;
        *path = "sdpa-mem-efficient";
        o->q_chunk = D <= 64 ? 64 : 32;
        o->kv_chunk = D <= 64 ? 64 : 128;
        snprintf(c->auto_reason, sizeof c->auto_reason,
                 "sdpa-mem-efficient: flash ruled out (sm_%d, head dim %d%s), D %% 4 == 0: cutlass tiles q%d kv%d",
                 cc, D, masked ? ", key mask" : "", o->q_chunk, o->kv_chunk);
    } else {
        *v = RP_CUDA_ATTN_MATH;
        *path = "sdpa-math";
        snprintf(c->auto_reason, sizeof c->auto_reason, "sdpa-math: no fused kernel for sm_%d, head dim %d", cc, D);
    }
}

static int misaligned(const void *p) { return ((uintptr_t)p & 15u) != 0; }

static void cd_attention(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                         const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                         rp_d_attn_note *note) {
    rp_cuda_attn_variant var = RP_CUDA_ATTN_MATH;
    rp_cuda_attn_opts o;
    memset(&o, 0, sizeof o);
    const int tf32 = CD->prec == RP_CUDA_PREC_TF32 || (CD->mode == RP_CUDA_GEMM_FAST && CD->prec == RP_CUDA_PREC_FP32);
    note->reason[0] = '\0';
    switch (ctx->attn.kind) {
    case RP_ATTN_MATH: var = RP_CUDA_ATTN_MATH; o.tf32 = tf32; break;
    case RP_ATTN_SPLIT: var = RP_CUDA_ATTN_SPLIT; o.tf32 = tf32; o.q_chunk = ctx->attn.q_chunk; break;
    case RP_ATTN_FLASH:
        if (D > RP_CUDA_ATTN_FLASH_MAX_D || D % 4 != 0) {
            /* our flash kernel takes head dims 4..128 in steps of 4; the VAE's single-head
             * mid-block attention (D = 512) is beyond it: math, said in the trace */
            var = RP_CUDA_ATTN_MATH;
            o.tf32 = tf32;
            snprintf(note->reason, sizeof note->reason,
                     "flash asked, head dim %d outside the CUDA flash kernel's 4..%d (multiple of 4): math", D,
                     RP_CUDA_ATTN_FLASH_MAX_D);
        } else {
            var = RP_CUDA_ATTN_FLASH;
            o.q_chunk = ctx->attn.q_chunk;
            o.kv_chunk = ctx->attn.kv_chunk;
        }
        break;
    case RP_ATTN_AUTO: {
        const char *path = "";
        choose_auto(CD, D, key_mask != NULL, &var, &o, &path);
        if (var != RP_CUDA_ATTN_FLASH) o.tf32 = tf32;
        snprintf(note->reason, sizeof note->reason, "%s", CD->auto_reason);
        snprintf(note->backend, sizeof note->backend, "%s", path);
        note->q_chunk = o.q_chunk;
        note->kv_chunk = o.kv_chunk;
        break;
    }
    default: {
        rp_error e;
        rp_error_clear(&e);
        RP_FAIL(&e, RP_ERR_UNSUPPORTED, "%s: attention '%s' has no CUDA kernel (cuda has math, split, flash, auto)",
                d->name, rp_attn_kind_name(ctx->attn.kind));
        rp_device_fail(d, RP_ERR_UNSUPPORTED, &e);
        return;
    }
    }
    /* the flash kernel reads q, k, v and writes out as 16-byte vectors; the models' activation
     * blocks place them at any float offset, so a misaligned call runs on aligned copies
     * (cudaMalloc gives 256-byte alignment; copies change no value) */
    float *dq = NULL;
    const size_t nq = (size_t)B * H * Tq * D, nk = (size_t)B * H * Tk * D;
    if (var == RP_CUDA_ATTN_FLASH && (misaligned(out) || misaligned(q) || misaligned(k) || misaligned(v)) && nq) {
        dq = cd_alloc(d, sizeof(float) * (2 * nq + 2 * nk));
        if (!dq) {
            rp_error e;
            rp_error_clear(&e);
            RP_FAIL(&e, RP_ERR_NOMEM, "%s: no memory for aligned attention copies", d->name);
            rp_device_fail(d, RP_ERR_NOMEM, &e);
            return;
        }
        float *dk = dq + nq, *dv = dk + nk, *dout = dv + nk;
        cd_copy(d, dq, q, sizeof(float) * nq);
        cd_copy(d, dk, k, sizeof(float) * nk);
        cd_copy(d, dv, v, sizeof(float) * nk);
        RUN(rp_cuda_attention(CD->attn, var, &o, dout, dq, dk, dv, key_mask, B, H, Tq, Tk, D, scale, err));
        cd_copy(d, out, dout, sizeof(float) * nq);
        cd_release(d, dq);
    } else {
        RUN(rp_cuda_attention(CD->attn, var, &o, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err));
    }
    snprintf(note->kind, sizeof note->kind, "%s", rp_cuda_attn_variant_name(var));
    note->q_chunk = o.q_chunk; /* 0: the kernel's default tile */
    note->kv_chunk = o.kv_chunk;
    snprintf(note->desc, sizeof note->desc, "%s", rp_cuda_attn_last_desc(CD->attn));
    if (ctx->trace) {
        rp_trace_note_once(ctx->trace, "cuda.attention", note->desc);
        if (note->reason[0])
            rp_trace_note_once(ctx->trace,
                               ctx->attn.kind == RP_ATTN_AUTO ? "cuda.attention.auto.reason" : "cuda.attention.fallback",
                               note->reason);
    }
}

static void cd_attention_canonical(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                                   const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D,
                                   float scale, const int *seg, int nseg, int nsplit, rp_d_attn_note *note) {
    const int bf16 = ctx->precision == RP_PREC_BF16;
    RUN(rp_cuda_attention_canonical(out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, bf16,
                                    CD->stream, err));
    snprintf(note->kind, sizeof note->kind, "canonical");
    snprintf(note->desc, sizeof note->desc, "cuda-canonical D%d %s (numerics invariant: the CPU's bits)", D,
             bf16 ? "bf16" : "fp32");
    note->reason[0] = '\0';
    if (ctx->trace) rp_trace_note_once(ctx->trace, "cuda.attention", note->desc);
}

static const rp_device_ops CUDA_OPS = {
    .kind = "cuda",
    .destroy = cd_destroy,
    .alloc = cd_alloc,
    .release = cd_release,
    .upload = cd_upload,
    .download = cd_download,
    .copy = cd_copy,
    .zero = cd_zero,
    .sync = cd_sync,
    .gemm = cd_gemm,
    .linear = cd_linear,
    .layernorm = cd_layernorm,
    .rmsnorm = cd_rmsnorm,
    .groupnorm = cd_groupnorm,
    .softmax_rows = cd_softmax_rows,
    .act = cd_act,
    .modulate = cd_modulate,
    .gated_add = cd_gated_add,
    .add = cd_add,
    .add_bcast = cd_add_bcast,
    .div_add = cd_div_add,
    .rope = cd_rope,
    .patchify = cd_patchify,
    .unpatchify = cd_unpatchify,
    .flux_unpack = cd_flux_unpack,
    .upsample2x = cd_upsample2x,
    .split_qkv_heads = cd_split_qkv,
    .to_heads = cd_to_heads,
    .from_heads = cd_from_heads,
    .transpose = cd_transpose,
    .add_transposed = cd_add_transposed,
    .timestep_embedding = cd_timestep_embedding,
    .conv2d = cd_conv2d,
    .attention = cd_attention,
    .attention_canonical = cd_attention_canonical,
};

int rp_device_is_cuda(const rp_device *d) { return d && d->ops == &CUDA_OPS; }

/* ---- creation ------------------------------------------------------------------------------------- */


/* The ordinal o->select and o->local_rank pick, or -1 with err set. */
static int pick(const rp_cuda_device_opts *o, rp_error *err) {
    const int n = rp_cuda_device_count();
    if (n <= 0) {
        RP_FAIL(err, RP_ERR_NOT_FOUND, "device=%s: no CUDA device is visible (driver or GPU missing)", o->select);
        return -1;
    }
    int match[64], m = 0;
    char seen[512] = "";
    for (int i = 0; i < n && m < 64; i++) {
        rp_cuda_device_info info;
        char msg[160];
        if (rp_cuda_device_describe(i, &info, msg, sizeof msg) != 0) continue;
        size_t l = strlen(seen);
        snprintf(seen + l, sizeof seen - l, "%s%d: %s", l ? ", " : "", i, info.name);
        if (rp_device_selects(o->select, i, info.name)) match[m++] = i;
    }
    if (m == 0) {
        RP_FAIL(err, RP_ERR_NOT_FOUND, "device=%s selects none of the visible GPUs (%s)", o->select, seen);
        return -1;
    }
    return match[(o->local_rank < 0 ? 0 : o->local_rank) % m];
}

rp_status rp_device_cuda_create(const rp_cuda_device_opts *o, rp_device **out, rp_error *err) {
    *out = NULL;
    if (o->mode == RP_CUDA_GEMM_DETERMINISTIC) RP_TRY(rp_cuda_gemm_workspace_config(err)); /* before any handle */
    const int ord = pick(o, err);
    if (ord < 0) return err ? err->code : RP_ERR_NOT_FOUND;
    RP_TRY(rp_cublas_load(err)); /* here, so that a missing library is named at once */
    cuda_dev *c = calloc(1, sizeof *c);
    if (!c) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    c->base.ops = &CUDA_OPS;
    c->ordinal = ord;
    c->prec = o->precision;
    c->mode = o->mode;
    char msg[160];
    cudaError_t ce = cudaSetDevice(ord);
    if (ce != cudaSuccess) {
        free(c);
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "cudaSetDevice(%d): %s", ord, cudaGetErrorString(ce));
    }
    if (rp_cuda_device_describe(ord, &c->info, msg, sizeof msg) != 0) {
        free(c);
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "GPU %d: %s", ord, msg);
    }
    snprintf(c->base.name, sizeof c->base.name, "cuda:%d %s (sm_%d%d, %d SMs)", ord, c->info.name,
             c->info.cc_major, c->info.cc_minor, c->info.sm_count);
    rp_cuda_gemm_opts go = rp_cuda_gemm_opts_default();
    go.precision = o->precision;
    go.mode = o->mode;
    rp_status st = rp_cuda_gemm_create(&go, &c->gemm, err);
    if (st == RP_OK) {
        c->stream = rp_cuda_gemm_stream(c->gemm);
        if (cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS)
            st = RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: cublasCreate failed", c->base.name);
    }
    if (st == RP_OK) st = rp_cuda_attn_create(&c->attn, c->stream, err);
    if (st != RP_OK) {
        rp_cuda_attn_destroy(c->attn);
        if (c->blas) cublasDestroy(c->blas);
        rp_cuda_gemm_destroy(c->gemm);
        free(c);
        return st;
    }
    *out = &c->base;
    return RP_OK;
}

void rp_device_cuda_trace_notes(rp_device *d, struct rp_trace *t) {
    if (!t || !rp_device_is_cuda(d)) return;
    char buf[512], key[48];
    rp_trace_note_once(t, "cuda.device", d->name);
    snprintf(buf, sizeof buf, "driver %d, runtime %d, cuBLAS %d", CD->info.driver_version,
             CD->info.runtime_version, CD->info.cublas_version);
    rp_trace_note_once(t, "cuda.versions", buf);
    rp_cuda_gemm_describe(CD->gemm, buf, sizeof buf);
    rp_trace_note_once(t, "cuda.gemm", buf);
    rp_trace_note_once(t, "cuda.workspace_config", rp_cuda_gemm_workspace_config_note());
    const int n = rp_cuda_gemm_cache_size(CD->gemm);
    for (int i = 0; i < n; i++) {
        rp_cuda_gemm_cache_entry(CD->gemm, i, buf, sizeof buf);
        snprintf(key, sizeof key, "cuda.gemm.algo.%d", i);
        rp_trace_note_once(t, key, buf);
    }
}

#endif /* REPRO_HAVE_CUDA */
