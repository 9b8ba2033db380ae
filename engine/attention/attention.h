/* attention.h — scaled dot-product attention as a swappable component.
 *
 * Every variant has the same contract, so models never know which one ran:
 *   q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, D)  ->  out (B, H, Tq, D)
 *   out = softmax(scale * q k^T + mask) v
 * key_mask (B, Tk): nonzero = attend, 0 = masked out (text padding); NULL = all.
 * A query row whose keys are all masked gets zeros (not NaN).
 * Variants differ only in the order (and accumulator precision) of their
 * floating-point work; all GEMMs go through rp_gemm, so ctx->precision and
 * ctx->reduce_split act on every variant alike.
 *
 *   math     per (b, h): S = scale q k^T (one GEMM), mask, rp_softmax_rows
 *            (fp32 exp, double sum), out = P v (one GEMM)
 *   split    math over query slices of q_chunk rows (ComfyUI/Fooocus split
 *            attention); default q_chunk 1024
 *   subquad  Rabe & Staats sub-quadratic attention in the order of the
 *            sub_quadratic_attention.py that ComfyUI/diffusers/A1111 ship: per query
 *            chunk (q_chunk rows, default 1024), each key/value chunk (kv_chunk
 *            keys, default floor(sqrt(Tk))) is summarised alone (its max, exp(s -
 *            max) in fp32, their fp32 sum, exp-weighted values by GEMM); the chunks
 *            are then rescaled to the global max and summed in chunk order, and
 *            divided. kv_chunk >= Tk takes that code's fast path: plain softmax on
 *            the query chunk (the split order).
 *   flash    FlashAttention-2 forward: per query tile (q_chunk rows, default 128)
 *            a running max m, fp32 running sum l and unnormalised fp32 output O over
 *            key/value tiles (kv_chunk keys, default 128): m' = max(m, rowmax S),
 *            P = exp(S - m'), l = exp(m - m') l + rowsum P, O = exp(m - m') O + P v;
 *            out = O * (1 / l) once at the end.
 *   auto     one of the above chosen from ctx->device and the call's shapes
 *            (rp_attn_auto_choose); the choice goes to ctx->trace as notes
 *            "attention.auto" (variant), "attention.auto.backend", ".q_chunk",
 *            ".kv_chunk" and "attention.auto.reason". An unset ctx->device means
 *            this machine, read at each call (rp_device_profile_host).
 * Chunk sizes come from ctx->attn (0 = the default above). */
#ifndef REPRO_ATTENTION_H
#define REPRO_ATTENTION_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"

#define RP_ATTN_SPLIT_Q_DEFAULT 1024
#define RP_ATTN_SUBQUAD_Q_DEFAULT 1024
#define RP_ATTN_FLASH_Q_DEFAULT 128
#define RP_ATTN_FLASH_KV_DEFAULT 128

/* Dispatches on ctx->attn.kind. Errors: RP_ERR_INVALID for bad shapes, NULL
 * tensors, negative chunk sizes, or a chunk size the variant does not take
 * (math takes none, split only q_chunk); RP_ERR_NOMEM when scratch cannot be
 * allocated. */
rp_status rp_attention(const rp_ctx *ctx, float *out, const float *q, const float *k,
                       const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                       int Tk, int D, float scale, rp_error *err);

/* Checks a configuration without running anything (the CLIs call it at parse
 * time): a known kind, chunk sizes >= 0, none for math, no kv_chunk for split. */
rp_status rp_attn_cfg_check(const rp_attn_cfg *c, rp_error *err);

/* The variants, callable directly (tests, bench). Chunk sizes must be >= 1 here
 * (the 0 = default mapping is rp_attention's); a larger chunk than the sequence
 * is allowed and means one chunk. */
rp_status rp_attention_math(const rp_ctx *ctx, float *out, const float *q, const float *k,
                            const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                            int Tk, int D, float scale, rp_error *err);
rp_status rp_attention_split(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, rp_error *err);
rp_status rp_attention_subquad(const rp_ctx *ctx, float *out, const float *q, const float *k,
                               const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                               int Tk, int D, float scale, int q_chunk, int kv_chunk,
                               rp_error *err);
rp_status rp_attention_flash(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, int kv_chunk,
                             rp_error *err);

/* What auto picked for one call. kind is never RP_ATTN_AUTO; the chunk sizes are
 * explicit (>= 1) for the variants that take them, 0 otherwise. */
typedef struct rp_attn_choice {
    rp_attn_kind kind;
    int q_chunk, kv_chunk;
    char backend[24];   /* the framework path it emulates, e.g. "sdpa-mem-efficient" */
    char reason[640];
} rp_attn_choice;

/* The auto selector (auto.c): the dispatch logic of PyTorch 2.x SDPA and of
 * ComfyUI/Fooocus's attention, evaluated on profile p instead of a GPU. The
 * frameworks run half precision, so dtype never rules flash out here.
 *   p->sdpa = 1 (PyTorch SDPA: the first backend whose constraints hold):
 *     flash          simd >= AVX-512 (~ SM >= 80), D % 8 == 0, D <= p->flash_max_head_dim,
 *                    and no key mask (the flash kernel takes no attn_mask). Tiles: PyTorch's
 *                    CPU flash kernel's rule, q 32 / 64 / 256 for Tq < 192 / < 768 / >= 768,
 *                    kv 512.
 *     mem-efficient  simd >= AVX2 (~ SM >= 50), D % 4 == 0 (fp32 alignment); masks allowed.
 *                    The cutlass kernel behind it rescales a running max/sum per key tile,
 *                    i.e. the flash order, with its own tiles: 64 queries x 64 keys for
 *                    D <= 64, 32 x 128 above. So: flash with those tiles.
 *     math           otherwise.
 *   p->sdpa = 0 (ComfyUI/Fooocus's own attention; bytes are fp32, attention upcast):
 *     split (p->split = 1): needs B*H*Tq*Tk*4*3 bytes; steps = 1, or the power of two
 *                    2^ceil(log2(need / mem_free)); slices of Tq / steps rows when steps
 *                    divides Tq, else of Tq rows (ComfyUI's rule). steps > 64 (ComfyUI
 *                    raises out-of-memory): sub-quadratic instead.
 *     subquad        the first q chunk x in 4096, 2048, 1024, 512, 256 with
 *                    mem_free / (B*H*4*x*4) >= Tk, kv chunk = Tk (no key chunking); none
 *                    fits: q 512, kv floor(sqrt(Tk)).
 * out->backend names the path ("sdpa-flash", "sdpa-mem-efficient", "sdpa-math",
 * "comfy-split", "comfy-subquad"). A nonzero override->q_chunk / kv_chunk replaces the
 * picked size where the chosen variant takes one (said in the reason).
 * Errors: RP_ERR_INVALID for a profile without memory or bad shapes. */
rp_status rp_attn_auto_choose(const rp_device_profile *p, const rp_attn_cfg *override, int B, int H,
                              int Tq, int Tk, int D, int masked, rp_attn_choice *out, rp_error *err);

/* Parses "math" | "split" | "subquad" | "flash" | "auto"; RP_ERR_INVALID otherwise. */
rp_status rp_attn_kind_parse(const char *s, rp_attn_kind *out, rp_error *err);

#endif
