/* device.c — the rp_d_* calls: the CPU op without a device, else the device's op
 * after mapping mirrored host pointers (device.h). Also the state every device
 * shares: the sticky error (set by rp_device_fail, engine/device_iface.c), the mirrors,
 * the host view scratch. */
#include "device.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"

void rp_device_destroy(rp_device *d) {
    if (!d) return;
    for (int i = 0; i < d->n_mirrors; i++) d->ops->release(d, d->mirrors[i].dev);
    free(d->mirrors);
    free(d->view);
    d->ops->destroy(d); /* frees d itself */
}

rp_status rp_d_check(const rp_ctx *ctx, rp_error *err) {
    rp_device *d = ctx->dev;
    if (!d) return RP_OK;
    d->ops->sync(d);
    rp_status st = d->status;
    if (st != RP_OK) {
        if (err) *err = d->err;
        d->status = RP_OK;
    }
    return st;
}

/* ---- memory ------------------------------------------------------------------------ */

float *rp_d_alloc(const rp_ctx *ctx, size_t floats, rp_error *err) {
    rp_device *d = ctx->dev;
    size_t bytes = (floats ? floats : 1) * sizeof(float);
    if (!d) {
        float *p = malloc(bytes);
        if (!p) RP_FAIL(err, RP_ERR_NOMEM, "cannot allocate %.1f MiB", bytes / 1048576.0);
        return p;
    }
    float *p = d->ops->alloc(d, bytes);
    if (!p) {
        rp_error e;
        rp_error_clear(&e);
        RP_FAIL(&e, RP_ERR_NOMEM, "%s: cannot allocate %.1f MiB of device memory", d->name, bytes / 1048576.0);
        rp_device_fail(d, RP_ERR_NOMEM, &e);
        if (err) *err = d->status == RP_OK ? e : d->err;
    }
    return p;
}

void rp_d_free(const rp_ctx *ctx, void *p) {
    if (!p) return;
    if (ctx->dev) ctx->dev->ops->release(ctx->dev, p);
    else free(p);
}

rp_status rp_d_mirror(const rp_ctx *ctx, const void *host, size_t bytes, rp_error *err) {
    rp_device *d = ctx->dev;
    if (!d) return RP_OK;
    for (int i = 0; i < d->n_mirrors; i++)
        if (d->mirrors[i].host == host && d->mirrors[i].bytes == bytes) return RP_OK;
    if (d->n_mirrors == d->cap_mirrors) {
        int cap = d->cap_mirrors ? 2 * d->cap_mirrors : 8;
        void *m = realloc(d->mirrors, sizeof *d->mirrors * (size_t)cap);
        if (!m) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the mirror table");
        d->mirrors = m;
        d->cap_mirrors = cap;
    }
    void *dev = d->ops->alloc(d, bytes ? bytes : 1);
    if (!dev)
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %.1f MiB for the model's parameters", d->name,
                       bytes / 1048576.0);
    d->ops->upload(d, dev, host, bytes);
    d->mirrors[d->n_mirrors++] = (struct rp_d_mirror_ent){host, bytes, dev};
    return rp_d_check(ctx, err);
}

/* The mirror holding p, or p (NULL, no device, or not mirrored: a device pointer). */
static const void *map(const rp_device *d, const void *p) {
    if (!d || !p) return p;
    const char *c = p;
    for (int i = 0; i < d->n_mirrors; i++) {
        const char *h = d->mirrors[i].host;
        if (c >= h && c < h + d->mirrors[i].bytes) return (char *)d->mirrors[i].dev + (c - h);
    }
    return p;
}
#define MF(p) ((const float *)map(d, (p)))

const float *rp_d_map(const rp_ctx *ctx, const float *p) { return map(ctx->dev, p); }

void rp_d_unmirror_all(const rp_ctx *ctx) {
    rp_device *d = ctx->dev;
    if (!d) return;
    d->ops->sync(d);
    for (int i = 0; i < d->n_mirrors; i++) d->ops->release(d, d->mirrors[i].dev);
    d->n_mirrors = 0;
}

void rp_d_upload(const rp_ctx *ctx, float *dst, const float *src, size_t n) {
    rp_device *d = ctx->dev;
    if (!d) memcpy(dst, src, n * sizeof(float));
    else if (d->status == RP_OK && n) d->ops->upload(d, dst, src, n * sizeof(float));
}

void rp_d_download(const rp_ctx *ctx, float *dst, const float *src, size_t n) {
    rp_device *d = ctx->dev;
    if (!d) memcpy(dst, src, n * sizeof(float));
    else if (d->status == RP_OK && n) d->ops->download(d, dst, MF(src), n * sizeof(float));
}

void rp_d_copy(const rp_ctx *ctx, float *dst, const float *src, size_t n) {
    rp_device *d = ctx->dev;
    if (!d) memcpy(dst, src, n * sizeof(float));
    else if (d->status == RP_OK && n) d->ops->copy(d, dst, MF(src), n * sizeof(float));
}

const float *rp_d_host_view(const rp_ctx *ctx, const float *x, size_t n) {
    rp_device *d = ctx->dev;
    if (!d) return x;
    if (d->status != RP_OK) return NULL;
    size_t bytes = (n ? n : 1) * sizeof(float);
    if (bytes > d->view_bytes) {
        void *v = realloc(d->view, bytes);
        if (!v) {
            rp_error e;
            rp_error_clear(&e);
            RP_FAIL(&e, RP_ERR_NOMEM, "cannot allocate %.1f MiB of host memory for a trace copy",
                    bytes / 1048576.0);
            rp_device_fail(d, RP_ERR_NOMEM, &e);
            return NULL;
        }
        d->view = v;
        d->view_bytes = bytes;
    }
    d->ops->download(d, d->view, MF(x), n * sizeof(float));
    return d->status == RP_OK ? d->view : NULL;
}

/* ---- ops: CPU op without a device, the device's after mapping ------------------------- */

/* Runs on_host without a device, on_device (with d the device) while it has no error. */
#define DISPATCH(on_host, on_device)                                                                           \
    do {                                                                                                       \
        rp_device *d = ctx->dev;                                                                               \
        if (!d) {                                                                                              \
            on_host;                                                                                           \
        } else if (d->status == RP_OK) {                                                                       \
            on_device;                                                                                         \
        }                                                                                                      \
    } while (0)

void rp_d_gemm(const rp_ctx *ctx, int transA, int transB, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    DISPATCH(rp_gemm(ctx, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
             d->ops->gemm(d, ctx, transA, transB, M, N, K, alpha, MF(A), lda, MF(B), ldb, beta, C, ldc));
}

void rp_d_linear_ld(const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w, int M) {
    rp_linear_w m = *w;
    DISPATCH(rp_linear_ld(ctx, out, ldo, in, w, M),
             (m.weight = MF(w->weight), m.bias = MF(w->bias), d->ops->linear(d, ctx, out, ldo, MF(in), &m, M)));
}

void rp_d_linear(const rp_ctx *ctx, float *out, const float *in, const rp_linear_w *w, int M) {
    if (!ctx->dev) rp_linear(ctx, out, in, w, M);
    else rp_d_linear_ld(ctx, out, w->out, in, w, M);
}

void rp_d_layernorm(const rp_ctx *ctx, float *out, const float *x, const float *w, const float *b, int N, int C,
                    float eps) {
    DISPATCH(rp_layernorm(out, x, w, b, N, C, eps), d->ops->layernorm(d, out, MF(x), MF(w), MF(b), N, C, eps));
}

void rp_d_rmsnorm(const rp_ctx *ctx, float *out, const float *x, const float *w, int N, int C, float eps) {
    DISPATCH(rp_rmsnorm(out, x, w, N, C, eps), d->ops->rmsnorm(d, out, MF(x), MF(w), N, C, eps));
}

void rp_d_groupnorm(const rp_ctx *ctx, float *out, const float *x, const float *w, const float *b, int N, int C,
                    int HW, int G, float eps) {
    DISPATCH(rp_groupnorm(out, x, w, b, N, C, HW, G, eps),
             d->ops->groupnorm(d, out, MF(x), MF(w), MF(b), N, C, HW, G, eps));
}

void rp_d_softmax_rows(const rp_ctx *ctx, float *x, int rows, int cols) {
    DISPATCH(rp_softmax_rows(x, rows, cols), d->ops->softmax_rows(d, x, x, rows, cols));
}

void rp_d_act_2d(const rp_ctx *ctx, rp_d_act a, float *out, int ldo, const float *x, int ldx, int rows, int cols) {
    DISPATCH(rp_act_2d((int)a, out, ldo, x, ldx, rows, cols), d->ops->act(d, a, out, ldo, MF(x), ldx, rows, cols));
}

/* A contiguous activation as one row of n (the device ops take int columns: split
 * into rows of 2^30 when n is larger). */
static void act_flat(const rp_ctx *ctx, rp_d_act a, float *out, const float *x, size_t n) {
    const size_t row = (size_t)1 << 30;
    for (size_t o = 0; o < n; o += row) {
        const size_t c = n - o < row ? n - o : row;
        rp_d_act_2d(ctx, a, out + o, (int)c, x + o, (int)c, 1, (int)c);
    }
}

void rp_d_gelu_tanh(const rp_ctx *ctx, float *out, const float *x, size_t n) {
    if (!ctx->dev) rp_gelu_tanh(out, x, n);
    else act_flat(ctx, RP_D_GELU_TANH, out, x, n);
}

void rp_d_gelu_erf(const rp_ctx *ctx, float *out, const float *x, size_t n) {
    if (!ctx->dev) rp_gelu_erf(out, x, n);
    else act_flat(ctx, RP_D_GELU_ERF, out, x, n);
}

void rp_d_silu(const rp_ctx *ctx, float *out, const float *x, size_t n) {
    if (!ctx->dev) rp_silu(out, x, n);
    else act_flat(ctx, RP_D_SILU, out, x, n);
}

void rp_d_modulate(const rp_ctx *ctx, float *x, const float *shift, const float *scale, int mod_stride, int B,
                   int T, int C) {
    DISPATCH(rp_modulate(x, shift, scale, mod_stride, B, T, C),
             d->ops->modulate(d, x, MF(shift), MF(scale), mod_stride, B, T, C));
}

void rp_d_gated_add(const rp_ctx *ctx, float *x, const float *gate, int mod_stride, const float *y, int B, int T,
                    int C) {
    DISPATCH(rp_gated_add(x, gate, mod_stride, y, B, T, C), d->ops->gated_add(d, x, MF(gate), mod_stride, MF(y), B, T, C));
}

void rp_d_add(const rp_ctx *ctx, float *y, const float *x, size_t n) {
    DISPATCH(rp_add(y, x, n), d->ops->add(d, y, MF(x), n));
}

void rp_d_add_bcast(const rp_ctx *ctx, float *y, const float *x, int B, size_t n) {
    DISPATCH(rp_add_bcast(y, x, B, n), d->ops->add_bcast(d, y, MF(x), B, n));
}

void rp_d_div_add(const rp_ctx *ctx, float *out, const float *x, float div, float add, size_t n) {
    DISPATCH(rp_div_add(out, x, div, add, n), d->ops->div_add(d, out, MF(x), div, add, n));
}

void rp_d_rope(const rp_ctx *ctx, float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D) {
    DISPATCH(rp_rope_pairs(x, cosb, sinb, B, NH, T, D), d->ops->rope(d, x, MF(cosb), MF(sinb), B, NH, T, D));
}

void rp_d_patchify(const rp_ctx *ctx, float *tokens, const float *img, int B, int C, int H, int W, int p) {
    DISPATCH(rp_patchify(tokens, img, B, C, H, W, p), d->ops->patchify(d, tokens, MF(img), B, C, H, W, p));
}

void rp_d_unpatchify(const rp_ctx *ctx, float *img, const float *tokens, int B, int C, int H, int W, int p) {
    DISPATCH(rp_unpatchify(img, tokens, B, C, H, W, p), d->ops->unpatchify(d, img, MF(tokens), B, C, H, W, p));
}

void rp_d_flux_unpack(const rp_ctx *ctx, float *img, const float *tokens, int B, int C, int H, int W) {
    DISPATCH(rp_flux_unpack(img, tokens, B, C, H, W), d->ops->flux_unpack(d, img, MF(tokens), B, C, H, W));
}

void rp_d_upsample_nearest2x(const rp_ctx *ctx, float *out, const float *in, int N, int C, int H, int W) {
    DISPATCH(rp_upsample_nearest2x(out, in, N, C, H, W), d->ops->upsample2x(d, out, MF(in), N, C, H, W));
}

void rp_d_split_qkv_heads(const rp_ctx *ctx, float *q, float *k, float *v, const float *qkv, int B, int T, int H,
                          int D) {
    DISPATCH(rp_split_qkv_heads(q, k, v, qkv, B, T, H, D), d->ops->split_qkv_heads(d, q, k, v, MF(qkv), B, T, H, D));
}

void rp_d_to_heads(const rp_ctx *ctx, float *out, const float *x, int B, int T, int H, int D, int S, int s0) {
    DISPATCH(rp_to_heads_rows(out, x, B, T, H, D, S, s0), d->ops->to_heads(d, out, MF(x), B, T, H, D, S, s0));
}

void rp_d_from_heads(const rp_ctx *ctx, float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                     int D) {
    DISPATCH(rp_from_heads_rows(out, ldo, x, B, S, s0, T, H, D), d->ops->from_heads(d, out, ldo, MF(x), B, S, s0, T, H, D));
}

void rp_d_transpose(const rp_ctx *ctx, float *out, const float *x, int rows, int cols) {
    DISPATCH(rp_transpose(out, x, rows, cols), d->ops->transpose(d, out, MF(x), rows, cols));
}

void rp_d_add_transposed(const rp_ctx *ctx, float *x, const float *y, int rows, int cols) {
    DISPATCH(rp_add_transposed(x, y, rows, cols), d->ops->add_transposed(d, x, MF(y), rows, cols));
}

void rp_d_timestep_embedding(const rp_ctx *ctx, float *out, const float *t, int B, int dim, float max_period,
                             float freq_shift) {
    DISPATCH(rp_timestep_embedding(out, t, B, dim, max_period, freq_shift),
             d->ops->timestep_embedding(d, out, MF(t), B, dim, max_period, freq_shift));
}

void rp_d_conv2d(const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b, int N, int IC,
                 int H, int W, int OC, int k, int s, int pad) {
    DISPATCH(rp_conv2d(ctx, out, in, w, b, N, IC, H, W, OC, k, s, pad),
             d->ops->conv2d(d, ctx, out, MF(in), MF(w), MF(b), N, IC, H, W, OC, k, s, pad));
}

rp_status rp_d_attention(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                         const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale, rp_error *err) {
    rp_device *d = ctx->dev;
    if (!d) return rp_attention(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err);
    if (ctx->numerics == RP_NUMERICS_INVARIANT) /* its own order, as rp_attention's */
        return rp_d_attention_canonical(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, NULL, 0, 0, err);
    if (d->status != RP_OK) return RP_OK; /* reported by the next rp_d_check */
    memset(&d->last_attn, 0, sizeof d->last_attn);
    d->ops->attention(d, ctx, out, MF(q), MF(k), MF(v), (const uint8_t *)map(d, key_mask), B, H, Tq, Tk, D, scale,
                      &d->last_attn);
    const rp_d_attn_note *n = &d->last_attn;
    if (n->kind[0] && d->status == RP_OK) {
        /* the kernel the device ran, for the classifier to hold against the variant asked; a
         * device's documented substitution (a head dim beyond its flash kernel) says why */
        rp_attn_note_ran(ctx->trace, n->kind, n->q_chunk, n->kv_chunk);
        if (ctx->attn.kind != RP_ATTN_AUTO && strcmp(n->kind, rp_attn_kind_name(ctx->attn.kind)) && n->reason[0] &&
            ctx->trace) {
            char key[64];
            snprintf(key, sizeof key, "attention.fallback.%s", n->kind);
            rp_trace_note_once(ctx->trace, key, n->reason);
        }
    }
    if (ctx->attn.kind == RP_ATTN_AUTO && n->backend[0] && d->status == RP_OK) {
        /* the device chose: the trace's "attention.auto*" say what ran here, as on the CPU */
        rp_attn_choice c;
        rp_error e;
        memset(&c, 0, sizeof c);
        if (rp_attn_kind_parse(n->kind, &c.kind, &e) != RP_OK) c.kind = RP_ATTN_MATH;
        c.q_chunk = n->q_chunk;
        c.kv_chunk = n->kv_chunk;
        snprintf(c.backend, sizeof c.backend, "%s", n->backend);
        snprintf(c.reason, sizeof c.reason, "%s: %s", d->name, n->reason);
        rp_attn_note_choice(ctx->trace, &c, B, H, Tq, Tk, D);
    }
    return RP_OK;
}

rp_status rp_d_attention_canonical(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                                   const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                   const int *seg, int nseg, int nsplit, rp_error *err) {
    rp_device *d = ctx->dev;
    if (!d)
        return rp_attention_canonical(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, err);
    if (d->status != RP_OK) return RP_OK; /* reported by the next rp_d_check */
    d->ops->attention_canonical(d, ctx, out, MF(q), MF(k), MF(v), (const uint8_t *)map(d, key_mask), B, H, Tq, Tk,
                                D, scale, seg, nseg, nsplit, &d->last_attn);
    return RP_OK;
}
