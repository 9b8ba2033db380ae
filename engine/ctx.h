/* ctx.h — the engine options every numeric call sees.
 *
 * Everything that can change the order or precision of floating-point work is
 * here, explicit, so the harness can sweep it and the trace can record it.
 * A ctx is owned by the caller and read-only to the engine (the trace it
 * points to is the one mutable part). */
#ifndef REPRO_CTX_H
#define REPRO_CTX_H

#include <stddef.h>

typedef enum rp_precision {
    RP_PREC_FP32 = 0, /* fp32 inputs, fp32 accumulation (cblas_sgemm) */
    RP_PREC_BF16      /* GEMM inputs rounded to bf16, fp32 accumulation. Debian's OpenBLAS
                         0.3.21 does not export cblas_sbgemm, so the rounded inputs go
                         through cblas_sgemm: a bf16 x bf16 product is exact in fp32, so
                         only the fp32 accumulation rounds, as in sbgemm. */
} rp_precision;

typedef enum rp_attn_kind {
    RP_ATTN_MATH = 0, /* full score matrix, softmax, PV */
    RP_ATTN_SPLIT,    /* query slices */
    RP_ATTN_SUBQUAD,  /* K/V chunks with running max / log-sum-exp */
    RP_ATTN_FLASH,    /* tiled online softmax (FlashAttention-2) */
    RP_ATTN_AUTO      /* chosen from a device profile */
} rp_attn_kind;

typedef struct rp_attn_cfg {
    rp_attn_kind kind;
    int q_chunk;   /* split/flash: query rows per slice/tile (0 = variant default) */
    int kv_chunk;  /* subquad/flash: key rows per chunk/tile (0 = variant default) */
} rp_attn_cfg;

struct rp_trace;

typedef struct rp_ctx {
    rp_precision precision;
    int reduce_split;        /* 1: every GEMM sums its K reduction as two halves added
                                afterwards (the order a split-K GPU kernel uses) */
    int threads;             /* GEMM threads (OpenBLAS); 0 = library default */
    rp_attn_cfg attn;
    struct rp_trace *trace;  /* per-layer activation statistics; NULL = off */
} rp_ctx;

/* A ctx with the defaults: fp32, no reduce_split, library threads, math attention. */
rp_ctx rp_ctx_default(void);

/* Applies process-wide settings that the ctx implies (OpenBLAS thread count).
 * Call once before a run; OpenBLAS keeps this state globally, not per call. */
void rp_ctx_apply(const rp_ctx *ctx);

const char *rp_precision_name(rp_precision p);
const char *rp_attn_kind_name(rp_attn_kind k);

#endif
