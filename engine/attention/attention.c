/* attention.c — the attention dispatcher, the helpers the variants share, and
 * the variant-name parser.
 *
 * The dispatcher maps ctx->attn's 0 chunk sizes to each variant's default and
 * rejects the rest of the bad configurations before any work: a negative size,
 * or a size given to a variant that has no such parameter (a sweep that sets
 * --attention-kv-chunk on split would otherwise measure nothing and not know). */
#include "attention.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops.h"
#include "../trace.h"
#include "internal.h"

rp_status rp_attn_check(const char *who, const rp_ctx *ctx, const float *out, const float *q,
                        const float *k, const float *v, int B, int H, int Tq, int Tk, int D,
                        rp_error *err) {
    if (!ctx) return RP_FAIL(err, RP_ERR_INVALID, "%s attention: ctx is NULL", who);
    if (!out || !q || !k || !v)
        return RP_FAIL(err, RP_ERR_INVALID, "%s attention: NULL tensor argument", who);
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s attention: bad shape B=%d H=%d Tq=%d Tk=%d D=%d", who,
                       B, H, Tq, Tk, D);
    return RP_OK;
}

int rp_attn_empty(float *out, int B, int H, int Tq, int Tk, int D) {
    if (Tq == 0) return 1;
    if (Tk == 0) {
        memset(out, 0, (size_t)B * H * Tq * D * sizeof(float));
        return 1;
    }
    return 0;
}

rp_attn_bh rp_attn_bh_at(float *out, const float *q, const float *k, const float *v, const uint8_t *key_mask,
                         int b, int h, int H, int Tq, int Tk, int D) {
    const size_t bh = (size_t)b * H + h;
    return (rp_attn_bh){.q = q + bh * Tq * D, .k = k + bh * Tk * D, .v = v + bh * Tk * D,
                        .out = out + bh * Tq * D, .m = key_mask ? key_mask + (size_t)b * Tk : NULL};
}

void rp_attn_mask_cols(float *S, int rows, int cols, int ld, const uint8_t *m) {
    if (!m) return;
    for (int i = 0; i < rows; i++) {
        float *row = S + (size_t)i * ld;
        for (int j = 0; j < cols; j++)
            if (!m[j]) row[j] = -INFINITY;
    }
}

rp_status rp_attn_sliced(const char *who, const rp_ctx *ctx, float *out, const float *q, const float *k,
                         const float *v, const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D,
                         float scale, int rows, rp_error *err) {
    assert(rows >= 1 && rows <= Tq && Tk >= 1);
    float *S = malloc((size_t)rows * Tk * sizeof(float)); /* (rows, Tk) scores, then P */
    if (!S)
        return RP_FAIL(err, RP_ERR_NOMEM, "%s attention: cannot allocate the %d x %d score slice", who, rows, Tk);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const rp_attn_bh bh = rp_attn_bh_at(out, q, k, v, key_mask, b, h, H, Tq, Tk, D);
            for (int i0 = 0; i0 < Tq; i0 += rows) {
                int n = Tq - i0 < rows ? Tq - i0 : rows;
                /* S (n, Tk) = scale * q[i0:i0+n] k^T, then P in place, then out rows = P v */
                rp_gemm(ctx, 0, 1, n, Tk, D, scale, bh.q + (size_t)i0 * D, D, bh.k, D, 0.0f, S, Tk);
                rp_attn_mask_cols(S, n, Tk, Tk, bh.m);
                rp_softmax_rows(S, n, Tk);
                rp_gemm(ctx, 0, 0, n, D, Tk, 1.0f, S, Tk, bh.v, D, 0.0f, bh.out + (size_t)i0 * D, D);
            }
        }
    free(S);
    return RP_OK;
}

/* Is "key=value" among t's notes (any position)? */
static int note_present(const rp_trace *t, const char *key, const char *value) {
    size_t kl = strlen(key);
    for (int i = 0; i < t->n_notes; i++) {
        const char *n = t->notes[i];
        if (!strncmp(n, key, kl) && n[kl] == '=' && !strcmp(n + kl + 1, value)) return 1;
    }
    return 0;
}

/* Contract in attention.h. A call whose choice differs is e.g. a model with cross-attention
 * of another length, or a GPU model after the CPU's prompt encoder. */
void rp_attn_note_choice(rp_trace *t, const rp_attn_choice *c, int B, int H, int Tq, int Tk, int D) {
    if (!t) return;
    char summary[96], key[96], v[32];
    snprintf(summary, sizeof summary, "%s %s q=%d kv=%d", rp_attn_kind_name(c->kind), c->backend,
             c->q_chunk, c->kv_chunk);
    int first = 1;
    for (int i = 0; i < t->n_notes && first; i++) first = strncmp(t->notes[i], "attention.auto.summary=", 23) != 0;
    if (first) {
        rp_trace_note(t, "attention.auto", rp_attn_kind_name(c->kind));
        rp_trace_note(t, "attention.auto.backend", c->backend);
        snprintf(v, sizeof v, "%d", c->q_chunk);
        rp_trace_note(t, "attention.auto.q_chunk", v);
        snprintf(v, sizeof v, "%d", c->kv_chunk);
        rp_trace_note(t, "attention.auto.kv_chunk", v);
        rp_trace_note(t, "attention.auto.reason", c->reason);
        rp_trace_note(t, "attention.auto.summary", summary);
        return;
    }
    if (note_present(t, "attention.auto.summary", summary)) return;
    snprintf(key, sizeof key, "attention.auto.%dx%dx%dx%dx%d", B, H, Tq, Tk, D);
    if (note_present(t, key, summary)) return;
    rp_trace_note_once(t, "attention.auto.mixed", "yes");
    rp_trace_note(t, key, summary);
}

/* Contract in attention.h. */
void rp_attn_note_ran(rp_trace *t, const char *kind, int q_chunk, int kv_chunk) {
    if (!t) return;
    char key[64], v[48];
    snprintf(key, sizeof key, "attention.ran.%s", kind);
    snprintf(v, sizeof v, "q=%d kv=%d", q_chunk, kv_chunk);
    if (!note_present(t, key, v)) rp_trace_note(t, key, v);
}

/* Runs variant `kind` with explicit chunk sizes (never AUTO). */
static rp_status run_variant(const rp_ctx *ctx, rp_attn_kind kind, int qc, int kc, float *out,
                             const float *q, const float *k, const float *v, const uint8_t *m,
                             int B, int H, int Tq, int Tk, int D, float scale, rp_error *err) {
    switch (kind) {
    case RP_ATTN_MATH:
        return rp_attention_math(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, err);
    case RP_ATTN_SPLIT:
        return rp_attention_split(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, qc, err);
    case RP_ATTN_SUBQUAD:
        return rp_attention_subquad(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, qc, kc, err);
    case RP_ATTN_FLASH:
        return rp_attention_flash(ctx, out, q, k, v, m, B, H, Tq, Tk, D, scale, qc, kc, err);
    case RP_ATTN_AUTO:
        break;
    }
    return RP_FAIL(err, RP_ERR_INVALID, "attention: unknown variant id %d", (int)kind);
}

rp_status rp_attention(const rp_ctx *ctx, float *out, const float *q, const float *k,
                       const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                       int Tk, int D, float scale, rp_error *err) {
    if (!ctx) return RP_FAIL(err, RP_ERR_INVALID, "attention: ctx is NULL");
    RP_TRY(rp_attn_cfg_check(&ctx->attn, err));
    if (ctx->numerics == RP_NUMERICS_INVARIANT) /* its own order: one segment, the keys as given */
        return rp_attention_canonical(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, NULL, 0, 0, err);
    int qc = ctx->attn.q_chunk, kc = ctx->attn.kv_chunk;
    switch (ctx->attn.kind) {
    case RP_ATTN_MATH:
        break;
    case RP_ATTN_SPLIT:
        if (!qc) qc = RP_ATTN_SPLIT_Q_DEFAULT;
        break;
    case RP_ATTN_SUBQUAD:
        if (!qc) qc = RP_ATTN_SUBQUAD_Q_DEFAULT;
        if (!kc) { /* sub_quadratic_attention.py's default: sqrt(key tokens) */
            kc = (int)sqrt((double)Tk);
            if (kc < 1) kc = 1;
        }
        break;
    case RP_ATTN_FLASH:
        if (!qc) qc = RP_ATTN_FLASH_Q_DEFAULT;
        if (!kc) kc = RP_ATTN_FLASH_KV_DEFAULT;
        break;
    case RP_ATTN_AUTO: {
        RP_TRY(rp_attn_check("auto", ctx, out, q, k, v, B, H, Tq, Tk, D, err));
        const rp_device_profile p = rp_attn_profile_of(ctx);
        rp_attn_choice c;
        RP_TRY(rp_attn_auto_choose(&p, &ctx->attn, B, H, Tq, Tk, D, key_mask != NULL, &c, err));
        rp_attn_note_choice(ctx->trace, &c, B, H, Tq, Tk, D);
        return run_variant(ctx, c.kind, c.q_chunk, c.kv_chunk, out, q, k, v, key_mask, B, H, Tq, Tk,
                           D, scale, err);
    }
    }
    return run_variant(ctx, ctx->attn.kind, qc, kc, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err);
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
