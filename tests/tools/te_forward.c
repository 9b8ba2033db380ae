/* te_forward.c — encodes prompts with the byte-level text encoder and dumps everything,
 * for tests/reference/test_te_parity.py.
 *
 * Usage: te_forward --preset NAME --weights PATH --out PATH [--weight-seed S]
 *                   [--threads N] [--attention KIND] [--] PROMPT...
 *   Writes synthetic weights of preset NAME (seed S, default 0) to --weights with
 *   rp_params_write_synthetic, loads them back from the file, encodes the B prompts
 *   in one batch and writes --out (safetensors):
 *     tokens  I32 (B, L)    mask U8 (B, L)    context F32 (B, L, context_dim)
 *     pooled  F32 (B, pooled_dim)
 *   metadata: preset, weights, weight_seed, repeat_bitwise ("1": a second encode of the
 *   same batch gave identical bytes), batch_invariant ("1": each prompt encoded alone gave
 *   the same bytes as in the batch), seconds (one batched encode).
 * Exit 0 on success, 1 on any failure (including repeat_bitwise or batch_invariant 0:
 * both are the encoder's contract), 2 on bad usage. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/attention/attention.h"
#include "engine/ctx.h"
#include "engine/error.h"
#include "engine/models/text_encoder.h"
#include "engine/params.h"
#include "engine/safetensors.h"

static int usage(void) {
    fprintf(stderr, "usage: te_forward --preset NAME --weights PATH --out PATH [--weight-seed S] "
                    "[--threads N] [--attention KIND] [--] PROMPT...\n");
    return 2;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const char *preset = NULL, *wpath = NULL, *opath = NULL, *attn = NULL;
    uint64_t wseed = 0;
    int threads = 0, a = 1;
    for (; a < argc; a++) {
        if (!strcmp(argv[a], "--")) { a++; break; }
        if (strncmp(argv[a], "--", 2) != 0) break;
        if (a + 1 >= argc) return usage();
        if (!strcmp(argv[a], "--preset")) preset = argv[++a];
        else if (!strcmp(argv[a], "--weights")) wpath = argv[++a];
        else if (!strcmp(argv[a], "--out")) opath = argv[++a];
        else if (!strcmp(argv[a], "--weight-seed")) wseed = strtoull(argv[++a], NULL, 10);
        else if (!strcmp(argv[a], "--threads")) threads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--attention")) attn = argv[++a];
        else return usage();
    }
    const int B = argc - a;
    if (!preset || !wpath || !opath || B < 1) return usage();
    const char *const *prompts = (const char *const *)(argv + a);

    rp_error err;
    rp_error_clear(&err);
    rp_te_config cfg;
    rp_param_list l = {0};
    rp_st_file *wf = NULL;
    rp_te *m = NULL;
    rp_st_writer *w = NULL;
    float *ctx_out = NULL, *pooled = NULL, *ctx2 = NULL, *pooled2 = NULL, *ctx1 = NULL, *pooled1 = NULL;
    uint8_t *mask = NULL, *mask1 = NULL;
    int32_t *tokens = NULL;
    int repeat_ok = 0, batch_inv = 1;
    double secs = 0.0;

    rp_ctx ctx = rp_ctx_default();
    ctx.threads = threads;
    rp_status st = rp_te_preset(preset, &cfg, &err);
    if (st == RP_OK && attn) st = rp_attn_kind_parse(attn, &ctx.attn.kind, &err);
    if (st == RP_OK) {
        rp_ctx_apply(&ctx);
        rp_te_param_specs(&cfg, &l);
        st = rp_params_write_synthetic(&l, preset, wseed, wpath, &err);
    }
    if (st == RP_OK) st = rp_st_open(wpath, &wf, &err);
    if (st == RP_OK) st = rp_te_load(&cfg, wf, &m, &err);

    const size_t L = (size_t)cfg.max_len, Cc = (size_t)cfg.context_dim, Pd = (size_t)cfg.pooled_dim;
    const size_t nC = (size_t)B * L * Cc, nP = (size_t)B * Pd, nM = (size_t)B * L;
    if (st == RP_OK) {
        ctx_out = malloc(nC * sizeof(float));  /* (B, L, Cc) */
        ctx2 = malloc(nC * sizeof(float));     /* (B, L, Cc) second encode */
        ctx1 = malloc(L * Cc * sizeof(float)); /* (1, L, Cc) one prompt alone */
        pooled = malloc(nP * sizeof(float));   /* (B, Pd) */
        pooled2 = malloc(nP * sizeof(float));  /* (B, Pd) */
        pooled1 = malloc(Pd * sizeof(float));  /* (1, Pd) */
        mask = malloc(nM);                     /* (B, L) */
        mask1 = malloc(L);                     /* (1, L) */
        tokens = malloc(nM * sizeof(int32_t)); /* (B, L) */
        if (!ctx_out || !ctx2 || !ctx1 || !pooled || !pooled2 || !pooled1 || !mask || !mask1 || !tokens)
            st = RP_FAIL(&err, RP_ERR_NOMEM, "te_forward: out of memory");
    }
    if (st == RP_OK) {
        const double t0 = now_s();
        st = rp_te_encode(m, &ctx, prompts, B, ctx_out, mask, pooled, &err);
        secs = now_s() - t0;
    }
    if (st == RP_OK) st = rp_te_encode(m, &ctx, prompts, B, ctx2, NULL, pooled2, &err);
    if (st == RP_OK) {
        repeat_ok = !memcmp(ctx_out, ctx2, nC * sizeof(float)) && !memcmp(pooled, pooled2, nP * sizeof(float));
        for (int b = 0; b < B && st == RP_OK; b++) {
            st = rp_te_encode(m, &ctx, prompts + b, 1, ctx1, mask1, pooled1, &err);
            if (st == RP_OK && (memcmp(ctx1, ctx_out + (size_t)b * L * Cc, L * Cc * sizeof(float)) ||
                                memcmp(pooled1, pooled + (size_t)b * Pd, Pd * sizeof(float)) ||
                                memcmp(mask1, mask + (size_t)b * L, L)))
                batch_inv = 0;
        }
        for (int b = 0; b < B; b++) rp_te_tokenize(prompts[b], (int)L, tokens + (size_t)b * L, NULL);
    }
    if (st == RP_OK) {
        char buf[64];
        w = rp_st_writer_new();
        const int64_t sh_tok[2] = {B, (int64_t)L}, sh_ctx[3] = {B, (int64_t)L, (int64_t)Cc};
        const int64_t sh_pool[2] = {B, (int64_t)Pd};
        st = rp_st_writer_add(w, "tokens", RP_DT_I32, 2, sh_tok, tokens, &err);
        if (st == RP_OK) st = rp_st_writer_add(w, "mask", RP_DT_U8, 2, sh_tok, mask, &err);
        if (st == RP_OK) st = rp_st_writer_add(w, "context", RP_DT_F32, 3, sh_ctx, ctx_out, &err);
        if (st == RP_OK) st = rp_st_writer_add(w, "pooled", RP_DT_F32, 2, sh_pool, pooled, &err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "preset", preset, &err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "weights", wpath, &err);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)wseed);
        if (st == RP_OK) st = rp_st_writer_meta(w, "weight_seed", buf, &err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "repeat_bitwise", repeat_ok ? "1" : "0", &err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "batch_invariant", batch_inv ? "1" : "0", &err);
        snprintf(buf, sizeof buf, "%.6f", secs);
        if (st == RP_OK) st = rp_st_writer_meta(w, "seconds", buf, &err);
        if (st == RP_OK) st = rp_st_writer_write(w, opath, &err);
    }
    if (st == RP_OK)
        printf("te_forward: %s, %d prompt(s), L %zu, context %zu, pooled %zu: encode %.3f s, "
               "repeat bitwise %s, batch invariant %s\n",
               preset, B, L, Cc, Pd, secs, repeat_ok ? "yes" : "NO", batch_inv ? "yes" : "no");

    rp_st_writer_free(w);
    free(ctx_out); free(ctx2); free(ctx1);
    free(pooled); free(pooled2); free(pooled1);
    free(mask); free(mask1); free(tokens);
    rp_te_free(m);
    if (wf) rp_st_close(wf);
    rp_params_free(&l);
    if (st != RP_OK) {
        fprintf(stderr, "te_forward: %s (%s) [%s]\n", err.msg, rp_status_name(st), err.where);
        return 1;
    }
    if (!repeat_ok || !batch_inv) {
        fprintf(stderr, "te_forward: %s\n", !repeat_ok ? "two encodes of the same batch differ bitwise"
                                                       : "a prompt encoded alone differs bitwise from the batch");
        return 1;
    }
    return 0;
}
