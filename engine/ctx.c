#include "ctx.h"

#include <cblas.h>

rp_ctx rp_ctx_default(void) {
    rp_ctx c = {0};
    c.precision = RP_PREC_FP32;
    c.reduce_split = 0;
    c.threads = 0;
    c.attn.kind = RP_ATTN_MATH;
    c.trace = NULL;
    return c;
}

void rp_ctx_apply(const rp_ctx *ctx) {
    if (ctx->threads > 0) openblas_set_num_threads(ctx->threads);
}

const char *rp_precision_name(rp_precision p) {
    switch (p) {
    case RP_PREC_FP32: return "fp32";
    case RP_PREC_BF16: return "bf16";
    }
    return "unknown";
}

const char *rp_attn_kind_name(rp_attn_kind k) {
    switch (k) {
    case RP_ATTN_MATH: return "math";
    case RP_ATTN_SPLIT: return "split";
    case RP_ATTN_SUBQUAD: return "subquad";
    case RP_ATTN_FLASH: return "flash";
    case RP_ATTN_AUTO: return "auto";
    }
    return "unknown";
}
