/* attention.c — the attention dispatcher and the variant-name parser.
 *
 * Only the math variant exists in this build; split/subquad/flash arrive in a
 * later issue and are refused with RP_ERR_UNSUPPORTED (never silently run as
 * math, since the variant's reduction order is exactly what a run measures). */
#include "attention.h"

#include <stddef.h>
#include <string.h>

rp_status rp_attention(const rp_ctx *ctx, float *out, const float *q, const float *k,
                       const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                       int Tk, int D, float scale, rp_error *err) {
    if (!ctx) return RP_FAIL(err, RP_ERR_INVALID, "attention: ctx is NULL");
    switch (ctx->attn.kind) {
    case RP_ATTN_MATH:
    /* AUTO would pick a variant from a device profile; with only math
     * implemented the choice is math, for now. */
    case RP_ATTN_AUTO:
        return rp_attention_math(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err);
    case RP_ATTN_SPLIT:
    case RP_ATTN_SUBQUAD:
    case RP_ATTN_FLASH:
        return RP_FAIL(err, RP_ERR_UNSUPPORTED,
                       "attention variant '%s' is not implemented in this build yet "
                       "(available: math, auto)", rp_attn_kind_name(ctx->attn.kind));
    }
    return RP_FAIL(err, RP_ERR_INVALID, "attention: unknown variant id %d", (int)ctx->attn.kind);
}

rp_status rp_attn_kind_parse(const char *s, rp_attn_kind *out, rp_error *err) {
    static const struct { const char *name; rp_attn_kind kind; } names[] = {
        {"math", RP_ATTN_MATH}, {"split", RP_ATTN_SPLIT}, {"subquad", RP_ATTN_SUBQUAD},
        {"flash", RP_ATTN_FLASH}, {"auto", RP_ATTN_AUTO},
    };
    if (!s) return RP_FAIL(err, RP_ERR_INVALID, "attention variant: no name given "
                           "(expected math, split, subquad, flash or auto)");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].name) == 0) {
            if (out) *out = names[i].kind;
            return RP_OK;
        }
    return RP_FAIL(err, RP_ERR_INVALID, "attention variant '%s' is not known "
                   "(expected math, split, subquad, flash or auto)", s);
}
