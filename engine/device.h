/* device.h — where a model's forward runs: one struct of function pointers per
 * compute device (nccl-tests style), and the rp_d_* calls the models make.
 *
 * A model forward is written once. With ctx->dev == NULL every rp_d_* call IS the
 * CPU op of engine/ops.h on host pointers (the same function, the same bits: the
 * plain path is untouched). With a device, every tensor pointer handed to an rp_d_*
 * op is device memory (an rp_d_alloc block) or a pointer into host memory mirrored
 * on the device (rp_d_mirror: a model's one parameter allocation), which every rp_d_*
 * call maps to the mirror's address. So a model passes its weight pointers as on the
 * CPU; host data crosses only through rp_d_upload / rp_d_download / rp_d_host_view.
 *
 * Devices:
 *   "host-check"  the CPU ops on memory that is unreadable (mprotect PROT_NONE)
 *                 except inside a device op, and every pointer argument checked to
 *                 lie inside a device block. A forward that reads device memory on
 *                 the host, or gives an op a host pointer, stops (SIGSEGV or an
 *                 error naming the op and argument) instead of silently working;
 *                 its output is bitwise the CPU path's. This is how CI, which has
 *                 no GPU, tests that the models' device wiring is complete.
 *   "cuda"        engine/cuda/: cuBLASLt GEMMs (precision, deterministic/fast mode,
 *                 algorithm records), our kernels, our attention (device_cuda.c;
 *                 built with REPRO_HAVE_CUDA only).
 *
 * Errors are sticky, like a CUDA stream's: a failing op records the first error in
 * the device and every later op is a no-op until rp_d_check() returns it (and
 * clears it). A forward checks once at its end (and before any host decision that
 * reads device results). Allocation failure returns NULL and records RP_ERR_NOMEM.
 *
 * A device is used by one thread at a time; nothing here is global. */
#ifndef REPRO_DEVICE_H
#define REPRO_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "ctx.h"
#include "error.h"
#include "ops.h"

typedef struct rp_device rp_device;

/* The activations the ops table names, as cuda_ops.h's rp_cuda_act. */
typedef enum rp_d_act { RP_D_GELU_TANH = 0, RP_D_GELU_ERF, RP_D_SILU } rp_d_act;

/* What the attention op ran (for the trace). Under attention auto a device that chooses by
 * its own rules (cuda: PyTorch SDPA's GPU dispatch) names the framework path in backend and
 * the tiles in q_chunk / kv_chunk (0: none or the kernel's default), and rp_d_attention
 * records that choice as the CPU selector records its own (rp_attn_note_choice); a device
 * whose op runs rp_attention (host-check) leaves backend "": rp_attention recorded it. */
typedef struct rp_d_attn_note {
    char kind[24];    /* "math" | "split" | "flash" (what ran) */
    char desc[160];   /* the device's one-line description */
    char reason[320]; /* for auto: why; for a kernel other than the variant asked: why; else "" */
    char backend[24]; /* for auto on a device that chose: "sdpa-flash", ...; else "" */
    int q_chunk, kv_chunk;
} rp_d_attn_note;

/* One device's implementation. Every op: device pointers (shapes as in the CPU op
 * named in brackets), enqueued in order, no return value (sticky error, above). */
typedef struct rp_device_ops {
    const char *kind; /* "host-check" | "cuda" */
    void (*destroy)(rp_device *d);
    /* memory */
    void *(*alloc)(rp_device *d, size_t bytes);
    void (*release)(rp_device *d, void *p);
    void (*upload)(rp_device *d, void *dst, const void *src, size_t bytes);   /* host -> device */
    void (*download)(rp_device *d, void *dst, const void *src, size_t bytes); /* device -> host; waits */
    void (*copy)(rp_device *d, void *dst, const void *src, size_t bytes);     /* device -> device, no overlap */
    void (*zero)(rp_device *d, void *p, size_t bytes);
    void (*sync)(rp_device *d); /* waits for all work; surfaces asynchronous faults */
    /* GEMM and linear [rp_gemm, rp_linear] */
    void (*gemm)(rp_device *d, const rp_ctx *ctx, int transA, int transB, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
    void (*linear)(rp_device *d, const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w,
                   int M); /* [rp_linear_ld]; w: device pointers */
    /* normalisation [rp_layernorm, rp_rmsnorm, rp_groupnorm, rp_softmax_rows (out may be x)] */
    void (*layernorm)(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                      float eps);
    void (*rmsnorm)(rp_device *d, float *out, const float *x, const float *w, int N, int C, float eps);
    void (*groupnorm)(rp_device *d, float *out, const float *x, const float *w, const float *b, int N, int C,
                      int HW, int G, float eps);
    void (*softmax_rows)(rp_device *d, float *out, const float *x, int rows, int cols);
    /* elementwise */
    void (*act)(rp_device *d, rp_d_act a, float *out, int ldo, const float *x, int ldx, int rows, int cols);
    void (*modulate)(rp_device *d, float *x, const float *shift, const float *scale, int mod_stride, int B,
                     int T, int C);
    void (*gated_add)(rp_device *d, float *x, const float *gate, int mod_stride, const float *y, int B, int T,
                      int C);
    void (*add)(rp_device *d, float *y, const float *x, size_t n);                 /* y += x */
    void (*add_bcast)(rp_device *d, float *y, const float *x, int B, size_t n);    /* y (B, n) += x (n) */
    void (*div_add)(rp_device *d, float *out, const float *x, float div, float add, size_t n);
    void (*rope)(rp_device *d, float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D);
    /* layouts and embeddings */
    void (*patchify)(rp_device *d, float *tokens, const float *img, int B, int C, int H, int W, int p);
    void (*unpatchify)(rp_device *d, float *img, const float *tokens, int B, int C, int H, int W, int p);
    void (*flux_unpack)(rp_device *d, float *img, const float *tokens, int B, int C, int H, int W);
    void (*upsample2x)(rp_device *d, float *out, const float *in, int N, int C, int H, int W);
    void (*split_qkv_heads)(rp_device *d, float *q, float *k, float *v, const float *qkv, int B, int T, int H,
                            int D);
    void (*to_heads)(rp_device *d, float *out, const float *x, int B, int T, int H, int D, int S, int s0);
    void (*from_heads)(rp_device *d, float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                       int D);
    void (*transpose)(rp_device *d, float *out, const float *x, int rows, int cols);
    void (*add_transposed)(rp_device *d, float *x, const float *y, int rows, int cols);
    void (*timestep_embedding)(rp_device *d, float *out, const float *t, int B, int dim, float max_period,
                               float freq_shift);
    void (*conv2d)(rp_device *d, const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b,
                   int N, int IC, int H, int W, int OC, int k, int s, int pad);
    /* attention [rp_attention; key_mask (B, Tk) bytes, device, or NULL] */
    void (*attention)(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                      const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                      rp_d_attn_note *note);
    /* the canonical attention of numerics invariant [rp_attention_canonical: seg (nseg) key
     * segments, the first nsplit split; seg NULL = one segment]; its bits are the CPU's */
    void (*attention_canonical)(rp_device *d, const rp_ctx *ctx, float *out, const float *q, const float *k,
                                const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D,
                                float scale, const int *seg, int nseg, int nsplit, rp_d_attn_note *note);
} rp_device_ops;

/* The state every device shares; an implementation embeds it first. */
struct rp_device {
    const rp_device_ops *ops;
    char name[160];          /* "host-check", "cuda:0 NVIDIA H200 (sm_90, 132 SMs)" */
    rp_status status;        /* first error since the last rp_d_check */
    rp_error err;
    /* mirrors of host memory (rp_d_mirror) */
    struct rp_d_mirror_ent {
        const void *host;
        size_t bytes;
        void *dev;
    } *mirrors;
    int n_mirrors, cap_mirrors;
    /* host scratch for rp_d_host_view */
    void *view;
    size_t view_bytes;
    /* one-line notes for the trace: filled by ops that choose something (attention) */
    rp_d_attn_note last_attn;
};

/* Records err as the device's sticky error unless one is already recorded. */
void rp_device_fail(rp_device *d, rp_status st, const rp_error *err);

/* Frees a device and everything it holds (mirrors, scratch). NULL: no-op. */
void rp_device_destroy(rp_device *d);

/* A "host-check" device (contract at the top). Never NULL except out of memory. */
rp_device *rp_device_host_check_create(void);

/* The device `name` asks for (device_open.c): "cpu" or "" -> *out NULL (the plain path);
 * "host-check"; "cuda", "cuda:<GPU name substring>", "cuda:#<ordinal>" -> the CUDA device
 * (engine/cuda/device_cuda.h; among the matching GPUs number local_rank modulo their
 * count) with GEMM precision `precision` (fp32 tf32 bf16 fp16; NULL = fp32) and gpu_mode
 * (deterministic | fast; NULL = deterministic). *ordinal: the CUDA ordinal made current,
 * -1 otherwise. Unknown names: RP_ERR_INVALID; cuda in a build without CUDA:
 * RP_ERR_UNSUPPORTED; no matching GPU: RP_ERR_NOT_FOUND. */
rp_status rp_device_open(const char *name, const char *precision, const char *gpu_mode, int local_rank,
                         rp_device **out, int *ordinal, rp_error *err);
/* 1 for "cuda" and "cuda:..." */
int rp_device_name_is_cuda(const char *name);
/* 1 when the device string selects the GPU of this ordinal and name: "cuda" every GPU,
 * "cuda:#<i>" GPU i, "cuda:<s>" the names containing s (ASCII case ignored). The one
 * rule for the cuda device's pick and for validation's count. */
int rp_device_selects(const char *device, int ordinal, const char *gpu_name);

/* ---- the calls the models make (ctx->dev NULL: the CPU op) ---------------------------- */

/* Returns and clears the device's sticky error (RP_OK without a device). */
rp_status rp_d_check(const rp_ctx *ctx, rp_error *err);

/* Buffers: rp_d_alloc returns device memory of `floats` floats (host malloc without
 * a device); NULL on failure (the device's error, or RP_ERR_NOMEM in err for the host). */
float *rp_d_alloc(const rp_ctx *ctx, size_t floats, rp_error *err);
void rp_d_free(const rp_ctx *ctx, void *p);

/* The device copy of host block [host, host + bytes), uploaded at the first call and
 * reused after (the host block must not change while mirrored). A pointer inside the
 * block maps to the same offset in the copy: rp_d_map. Without a device: host. */
rp_status rp_d_mirror(const rp_ctx *ctx, const void *host, size_t bytes, rp_error *err);
/* Device address of host pointer p inside a mirrored block; p itself without a
 * device, for NULL, or for a p in no mirror (taken to be a device pointer already). */
const float *rp_d_map(const rp_ctx *ctx, const float *p);
/* Drops every mirror (device memory freed). */
void rp_d_unmirror_all(const rp_ctx *ctx);

void rp_d_upload(const rp_ctx *ctx, float *dst, const float *src, size_t n);   /* n floats; memcpy on host */
void rp_d_download(const rp_ctx *ctx, float *dst, const float *src, size_t n); /* memcpy on host */
void rp_d_copy(const rp_ctx *ctx, float *dst, const float *src, size_t n);     /* no overlap */
/* A host-readable copy of x (n floats), valid until the next rp_d_host_view on this
 * device; x itself without a device. NULL when the download failed. */
const float *rp_d_host_view(const rp_ctx *ctx, const float *x, size_t n);

/* The ops; arguments as the CPU functions of engine/ops.h (or as named), and the same
 * aliasing rules: norms, activations, modulate and the elementwise ops may work in place
 * (out == x) on every device. */
void rp_d_gemm(const rp_ctx *ctx, int transA, int transB, int M, int N, int K, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);
void rp_d_linear(const rp_ctx *ctx, float *out, const float *in, const rp_linear_w *w, int M);
void rp_d_linear_ld(const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w, int M);
void rp_d_layernorm(const rp_ctx *ctx, float *out, const float *x, const float *w, const float *b, int N, int C,
                    float eps);
void rp_d_rmsnorm(const rp_ctx *ctx, float *out, const float *x, const float *w, int N, int C, float eps);
void rp_d_groupnorm(const rp_ctx *ctx, float *out, const float *x, const float *w, const float *b, int N, int C,
                    int HW, int G, float eps);
void rp_d_softmax_rows(const rp_ctx *ctx, float *x, int rows, int cols); /* in place */
void rp_d_gelu_tanh(const rp_ctx *ctx, float *out, const float *x, size_t n);
void rp_d_gelu_erf(const rp_ctx *ctx, float *out, const float *x, size_t n);
void rp_d_silu(const rp_ctx *ctx, float *out, const float *x, size_t n);
/* out (rows, ldo)[:, :cols] = act(x (rows, ldx)[:, :cols]) */
void rp_d_act_2d(const rp_ctx *ctx, rp_d_act a, float *out, int ldo, const float *x, int ldx, int rows, int cols);
void rp_d_modulate(const rp_ctx *ctx, float *x, const float *shift, const float *scale, int mod_stride, int B,
                   int T, int C);
void rp_d_gated_add(const rp_ctx *ctx, float *x, const float *gate, int mod_stride, const float *y, int B, int T,
                    int C);
void rp_d_add(const rp_ctx *ctx, float *y, const float *x, size_t n);
void rp_d_add_bcast(const rp_ctx *ctx, float *y, const float *x, int B, size_t n);
void rp_d_div_add(const rp_ctx *ctx, float *out, const float *x, float div, float add, size_t n);
/* FLUX RoPE [flux.c apply_rope]: x (B, NH, T, D), cosb, sinb (T, D) */
void rp_d_rope(const rp_ctx *ctx, float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D);
void rp_d_patchify(const rp_ctx *ctx, float *tokens, const float *img, int B, int C, int H, int W, int p);
void rp_d_unpatchify(const rp_ctx *ctx, float *img, const float *tokens, int B, int C, int H, int W, int p);
void rp_d_flux_unpack(const rp_ctx *ctx, float *img, const float *tokens, int B, int C, int H, int W);
void rp_d_upsample_nearest2x(const rp_ctx *ctx, float *out, const float *in, int N, int C, int H, int W);
void rp_d_split_qkv_heads(const rp_ctx *ctx, float *q, float *k, float *v, const float *qkv, int B, int T, int H,
                          int D);
/* x (B, T, H, D) -> rows [s0, s0 + T) of out (B, H, S, D) */
void rp_d_to_heads(const rp_ctx *ctx, float *out, const float *x, int B, int T, int H, int D, int S, int s0);
/* rows [s0, s0 + T) of x (B, H, S, D) -> out (B, T, ldo)[:, :, :H*D] */
void rp_d_from_heads(const rp_ctx *ctx, float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                     int D);
void rp_d_transpose(const rp_ctx *ctx, float *out, const float *x, int rows, int cols); /* out (cols, rows) */
void rp_d_add_transposed(const rp_ctx *ctx, float *x, const float *y, int rows, int cols); /* x (rows, cols) += y^T */
/* t: (B) DEVICE timesteps */
void rp_d_timestep_embedding(const rp_ctx *ctx, float *out, const float *t, int B, int dim, float max_period,
                             float freq_shift);
void rp_d_conv2d(const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b, int N, int IC,
                 int H, int W, int OC, int k, int s, int pad);
/* rp_attention on the device; without a device rp_attention itself (its status then
 * returned through rp_d_check's err: the host path records it in *err directly). Under
 * numerics invariant, as rp_attention: the canonical attention over one segment. */
rp_status rp_d_attention(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                         const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale, rp_error *err);
/* rp_attention_canonical on the device (its segments: engine/attention/attention.h); without
 * a device rp_attention_canonical itself (status as rp_d_attention's). */
rp_status rp_d_attention_canonical(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                                   const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                   const int *seg, int nseg, int nsplit, rp_error *err);

#endif
