/* device_host.c — the "host-check" device (device.h): the CPU ops, on memory the host
 * cannot touch outside an op.
 *
 * Every block (rp_d_alloc, mirrors) is its own mmap, kept PROT_NONE; an op opens all
 * blocks (PROT_READ|PROT_WRITE), checks that each tensor pointer it was given lies in
 * a block, runs the CPU op, and closes them again. So a model that reads or writes a
 * device tensor on the host faults at that line, and one that hands an op a host
 * pointer gets an error naming the op and the argument. Upload / download / views
 * are the only other doors, as on a GPU. Its results are the CPU path's, bit for bit
 * (the same functions run). Slow (two mprotect sweeps per op): a test device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attention/attention.h"
#include "device.h"
#include "trace.h"

typedef struct block {
    char *p;
    size_t len; /* mapped length (page multiple) */
    size_t bytes;
} block;

typedef struct host_check {
    rp_device base; /* first: a rp_device * is a host_check * */
    block *blocks;
    int n, cap;
} host_check;

static void protect_all(host_check *h, int prot) {
    for (int i = 0; i < h->n; i++)
        if (mprotect(h->blocks[i].p, h->blocks[i].len, prot) != 0) {
            perror("repro: host-check device: mprotect");
            abort();
        }
}

static void fail(rp_device *d, const char *op, const char *arg, const void *p) {
    rp_error e;
    rp_error_clear(&e);
    RP_FAIL(&e, RP_ERR_INVALID, "host-check device: %s: argument '%s' (%p) is not device memory", op, arg, p);
    rp_device_fail(d, RP_ERR_INVALID, &e);
}

/* 1 when [p, p + bytes) lies in one block (bytes 0: p inside a block). */
static int in_block(const host_check *h, const void *p, size_t bytes) {
    const char *c = p;
    for (int i = 0; i < h->n; i++)
        if (c >= h->blocks[i].p && c < h->blocks[i].p + h->blocks[i].bytes)
            return bytes <= (size_t)(h->blocks[i].p + h->blocks[i].bytes - c);
    return 0;
}

/* Checks the named pointers (NULLs allowed where optional: pass opt 1) and opens
 * the blocks. Returns 0 (and records the error) when one is not device memory. */
static int enter(rp_device *d, const char *op, int n, const char *const *names, const void *const *ptrs,
                 const int *optional) {
    host_check *h = (host_check *)d;
    if (d->status != RP_OK) return 0;
    for (int i = 0; i < n; i++) {
        if (!ptrs[i] && optional && optional[i]) continue;
        if (!in_block(h, ptrs[i], 0)) {
            fail(d, op, names[i], ptrs[i]);
            return 0;
        }
    }
    protect_all(h, PROT_READ | PROT_WRITE);
    return 1;
}
static void leave(rp_device *d) { protect_all((host_check *)d, PROT_NONE); }

#define ARGS(...) __VA_ARGS__
/* ENTER(op, {names}, {ptrs}, {optional}) — returns from the op when a check fails. */
#define ENTER(op, names, ptrs, opt)                                                                   \
    do {                                                                                              \
        static const char *const nm_[] = {names};                                                     \
        const void *const pt_[] = {ptrs};                                                             \
        static const int op_[] = {opt};                                                               \
        if (!enter(d, op, (int)(sizeof nm_ / sizeof *nm_), nm_, pt_, op_)) return;                    \
    } while (0)

/* ---- memory ---------------------------------------------------------------------------- */

static void *hc_alloc(rp_device *d, size_t bytes) {
    host_check *h = (host_check *)d;
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 16;
        block *b = realloc(h->blocks, sizeof *b * (size_t)cap);
        if (!b) return NULL;
        h->blocks = b;
        h->cap = cap;
    }
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t len = (bytes + pg - 1) / pg * pg;
    void *p = mmap(NULL, len ? len : pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    h->blocks[h->n++] = (block){p, len ? len : pg, bytes};
    return p;
}

static void hc_release(rp_device *d, void *p) {
    host_check *h = (host_check *)d;
    for (int i = 0; i < h->n; i++)
        if (h->blocks[i].p == p) {
            munmap(p, h->blocks[i].len);
            h->blocks[i] = h->blocks[--h->n];
            return;
        }
    fail(d, "free", "p", p);
}

static void hc_upload(rp_device *d, void *dst, const void *src, size_t bytes) {
    if (!in_block((host_check *)d, dst, bytes)) return fail(d, "upload", "dst", dst);
    protect_all((host_check *)d, PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    leave(d);
}

static void hc_download(rp_device *d, void *dst, const void *src, size_t bytes) {
    if (!in_block((host_check *)d, src, bytes)) return fail(d, "download", "src", src);
    if (in_block((host_check *)d, dst, 0)) return fail(d, "download", "dst (a device block, not host memory)", dst);
    protect_all((host_check *)d, PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    leave(d);
}

static void hc_copy(rp_device *d, void *dst, const void *src, size_t bytes) {
    if (!in_block((host_check *)d, dst, bytes)) return fail(d, "copy", "dst", dst);
    if (!in_block((host_check *)d, src, bytes)) return fail(d, "copy", "src", src);
    protect_all((host_check *)d, PROT_READ | PROT_WRITE);
    memcpy(dst, src, bytes);
    leave(d);
}

static void hc_zero(rp_device *d, void *p, size_t bytes) {
    if (!in_block((host_check *)d, p, bytes)) return fail(d, "zero", "p", p);
    protect_all((host_check *)d, PROT_READ | PROT_WRITE);
    memset(p, 0, bytes);
    leave(d);
}

static void hc_sync(rp_device *d) { (void)d; }

static void hc_destroy(rp_device *d) {
    host_check *h = (host_check *)d;
    for (int i = 0; i < h->n; i++) munmap(h->blocks[i].p, h->blocks[i].len);
    free(h->blocks);
    free(h);
}

/* ---- ops ----------------------------------------------------------------------------------- */

static void hc_gemm(rp_device *d, const rp_ctx *ctx, int tA, int tB, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    ENTER("gemm", ARGS("A", "B", "C"), ARGS(A, B, C), ARGS(0, 0, 0));
    rp_gemm(ctx, tA, tB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    leave(d);
}

static void hc_linear(rp_device *d, const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w,
                      int M) {
    ENTER("linear", ARGS("out", "in", "weight", "bias"), ARGS(out, in, w->weight, w->bias), ARGS(0, 0, 0, 1));
    rp_linear_ld(ctx, out, ldo, in, w, M);
    leave(d);
}

static void hc_layernorm(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                         float eps) {
    ENTER("layernorm", ARGS("out", "x", "w", "b"), ARGS(out, x, w, b), ARGS(0, 0, 1, 1));
    rp_layernorm(out, x, w, b, N, C, eps);
    leave(d);
}

static void hc_rmsnorm(rp_device *d, float *out, const float *x, const float *w, int N, int C, float eps) {
    ENTER("rmsnorm", ARGS("out", "x", "w"), ARGS(out, x, w), ARGS(0, 0, 1));
    rp_rmsnorm(out, x, w, N, C, eps);
    leave(d);
}

static void hc_groupnorm(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                         int HW, int G, float eps) {
    ENTER("groupnorm", ARGS("out", "x", "w", "b"), ARGS(out, x, w, b), ARGS(0, 0, 1, 1));
    rp_groupnorm(out, x, w, b, N, C, HW, G, eps);
    leave(d);
}

static void hc_softmax_rows(rp_device *d, float *out, const float *x, int rows, int cols) {
    ENTER("softmax_rows", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    if (out != x) memcpy(out, x, sizeof(float) * (size_t)rows * cols);
    rp_softmax_rows(out, rows, cols);
    leave(d);
}

static void hc_act(rp_device *d, rp_d_act a, float *out, int ldo, const float *x, int ldx, int rows, int cols) {
    ENTER("activation", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    rp_act_2d((int)a, out, ldo, x, ldx, rows, cols);
    leave(d);
}

static void hc_modulate(rp_device *d, float *x, const float *shift, const float *scale, int ms, int B, int T, int C) {
    ENTER("modulate", ARGS("x", "shift", "scale"), ARGS(x, shift, scale), ARGS(0, 0, 0));
    rp_modulate(x, shift, scale, ms, B, T, C);
    leave(d);
}

static void hc_gated_add(rp_device *d, float *x, const float *gate, int ms, const float *y, int B, int T, int C) {
    ENTER("gated_add", ARGS("x", "gate", "y"), ARGS(x, gate, y), ARGS(0, 0, 0));
    rp_gated_add(x, gate, ms, y, B, T, C);
    leave(d);
}

static void hc_add(rp_device *d, float *y, const float *x, size_t n) {
    ENTER("add", ARGS("y", "x"), ARGS(y, x), ARGS(0, 0));
    rp_add(y, x, n);
    leave(d);
}

static void hc_add_bcast(rp_device *d, float *y, const float *x, int B, size_t n) {
    ENTER("add_bcast", ARGS("y", "x"), ARGS(y, x), ARGS(0, 0));
    rp_add_bcast(y, x, B, n);
    leave(d);
}

static void hc_div_add(rp_device *d, float *out, const float *x, float div, float add, size_t n) {
    ENTER("div_add", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    rp_div_add(out, x, div, add, n);
    leave(d);
}

static void hc_rope(rp_device *d, float *x, const float *c, const float *s, int B, int NH, int T, int D) {
    ENTER("rope", ARGS("x", "cos", "sin"), ARGS(x, c, s), ARGS(0, 0, 0));
    rp_rope_pairs(x, c, s, B, NH, T, D);
    leave(d);
}

static void hc_patchify(rp_device *d, float *tokens, const float *img, int B, int C, int H, int W, int p) {
    ENTER("patchify", ARGS("tokens", "img"), ARGS(tokens, img), ARGS(0, 0));
    rp_patchify(tokens, img, B, C, H, W, p);
    leave(d);
}

static void hc_unpatchify(rp_device *d, float *img, const float *tokens, int B, int C, int H, int W, int p) {
    ENTER("unpatchify", ARGS("img", "tokens"), ARGS(img, tokens), ARGS(0, 0));
    rp_unpatchify(img, tokens, B, C, H, W, p);
    leave(d);
}

static void hc_flux_unpack(rp_device *d, float *img, const float *tokens, int B, int C, int H, int W) {
    ENTER("flux_unpack", ARGS("img", "tokens"), ARGS(img, tokens), ARGS(0, 0));
    rp_flux_unpack(img, tokens, B, C, H, W);
    leave(d);
}

static void hc_upsample2x(rp_device *d, float *out, const float *in, int N, int C, int H, int W) {
    ENTER("upsample_nearest2x", ARGS("out", "in"), ARGS(out, in), ARGS(0, 0));
    rp_upsample_nearest2x(out, in, N, C, H, W);
    leave(d);
}

static void hc_split_qkv(rp_device *d, float *q, float *k, float *v, const float *qkv, int B, int T, int H, int D) {
    ENTER("split_qkv_heads", ARGS("q", "k", "v", "qkv"), ARGS(q, k, v, qkv), ARGS(0, 0, 0, 0));
    rp_split_qkv_heads(q, k, v, qkv, B, T, H, D);
    leave(d);
}

static void hc_to_heads(rp_device *d, float *out, const float *x, int B, int T, int H, int D, int S, int s0) {
    ENTER("to_heads", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    rp_to_heads_rows(out, x, B, T, H, D, S, s0);
    leave(d);
}

static void hc_from_heads(rp_device *d, float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                          int D) {
    ENTER("from_heads", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    rp_from_heads_rows(out, ldo, x, B, S, s0, T, H, D);
    leave(d);
}

static void hc_transpose(rp_device *d, float *out, const float *x, int rows, int cols) {
    ENTER("transpose", ARGS("out", "x"), ARGS(out, x), ARGS(0, 0));
    rp_transpose(out, x, rows, cols);
    leave(d);
}

static void hc_add_transposed(rp_device *d, float *x, const float *y, int rows, int cols) {
    ENTER("add_transposed", ARGS("x", "y"), ARGS(x, y), ARGS(0, 0));
    rp_add_transposed(x, y, rows, cols);
    leave(d);
}

static void hc_timestep_embedding(rp_device *d, float *out, const float *t, int B, int dim, float max_period,
                                  float freq_shift) {
    ENTER("timestep_embedding", ARGS("out", "t"), ARGS(out, t), ARGS(0, 0));
    rp_timestep_embedding(out, t, B, dim, max_period, freq_shift);
    leave(d);
}

static void hc_conv2d(rp_device *d, const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b,
                      int N, int IC, int H, int W, int OC, int k, int s, int pad) {
    ENTER("conv2d", ARGS("out", "in", "w", "b"), ARGS(out, in, w, b), ARGS(0, 0, 0, 1));
    rp_conv2d(ctx, out, in, w, b, N, IC, H, W, OC, k, s, pad);
    leave(d);
}

static void hc_attention(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                         const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                         rp_d_attn_note *note) {
    ENTER("attention", ARGS("out", "q", "k", "v", "key_mask"), ARGS(out, q, k, v, key_mask), ARGS(0, 0, 0, 0, 1));
    rp_error e;
    rp_error_clear(&e);
    rp_status st = rp_attention(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, &e);
    leave(d);
    if (st != RP_OK) rp_device_fail(d, st, &e);
    snprintf(note->kind, sizeof note->kind, "%s", rp_attn_kind_name(ctx->attn.kind));
    snprintf(note->desc, sizeof note->desc, "host-check %s", rp_attn_kind_name(ctx->attn.kind));
    note->reason[0] = '\0';
}

static void hc_attention_canonical(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                                   const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D,
                                   float scale, const int *seg, int nseg, int nsplit, rp_d_attn_note *note) {
    ENTER("attention_canonical", ARGS("out", "q", "k", "v", "key_mask"), ARGS(out, q, k, v, key_mask),
          ARGS(0, 0, 0, 0, 1));
    rp_error e;
    rp_error_clear(&e);
    rp_status st = rp_attention_canonical(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, seg, nseg, nsplit, &e);
    leave(d);
    if (st != RP_OK) rp_device_fail(d, st, &e);
    snprintf(note->kind, sizeof note->kind, "canonical");
    snprintf(note->desc, sizeof note->desc, "host-check canonical");
    note->reason[0] = '\0';
}

static const rp_device_ops HOST_CHECK_OPS = {
    .kind = "host-check",
    .destroy = hc_destroy,
    .alloc = hc_alloc,
    .release = hc_release,
    .upload = hc_upload,
    .download = hc_download,
    .copy = hc_copy,
    .zero = hc_zero,
    .sync = hc_sync,
    .gemm = hc_gemm,
    .linear = hc_linear,
    .layernorm = hc_layernorm,
    .rmsnorm = hc_rmsnorm,
    .groupnorm = hc_groupnorm,
    .softmax_rows = hc_softmax_rows,
    .act = hc_act,
    .modulate = hc_modulate,
    .gated_add = hc_gated_add,
    .add = hc_add,
    .add_bcast = hc_add_bcast,
    .div_add = hc_div_add,
    .rope = hc_rope,
    .patchify = hc_patchify,
    .unpatchify = hc_unpatchify,
    .flux_unpack = hc_flux_unpack,
    .upsample2x = hc_upsample2x,
    .split_qkv_heads = hc_split_qkv,
    .to_heads = hc_to_heads,
    .from_heads = hc_from_heads,
    .transpose = hc_transpose,
    .add_transposed = hc_add_transposed,
    .timestep_embedding = hc_timestep_embedding,
    .conv2d = hc_conv2d,
    .attention = hc_attention,
    .attention_canonical = hc_attention_canonical,
};

rp_device *rp_device_host_check_create(void) {
    host_check *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->base.ops = &HOST_CHECK_OPS;
    snprintf(h->base.name, sizeof h->base.name, "host-check");
    return &h->base;
}
