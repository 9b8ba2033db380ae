/* isa_dump.c — writes the outputs of every elementwise op on fixed inputs to a
 * file. Built once per -march level (tests/cmake/isa.cmake) with the ISA clones
 * disabled, so each binary runs one instruction set; tests/isa/compare.sh then
 * requires the files to be byte-identical: our own float code gives the same
 * bits on SSE2, AVX2 and AVX-512 machines. (Default-mode GEMMs are OpenBLAS's:
 * their kernel choice is a swept knob, OPENBLAS_CORETYPE, not something we claim
 * is fixed; the invariant GEMM is ours and is dumped.) */
#include <stdio.h>
#include <stdlib.h>

#include "engine/attention/attention.h"
#include "engine/fastmath.h"
#include "engine/ops.h"
#include "engine/rng.h"

static void put(FILE *f, const float *y, size_t n) { fwrite(y, sizeof(float), n, f); }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: isa_dump OUT\n"); return 2; }
    const size_t n = 1 << 18;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)), *z = malloc(n * sizeof(float));
    rp_randn(x, n, 11, 0, 0);
    for (size_t i = 0; i < n; i++) x[i] *= (float)(i % 17) * 0.7f + 0.01f; /* wide range */
    FILE *f = fopen(argv[1], "wb");
    if (!f) { perror(argv[1]); return 1; }
    for (size_t i = 0; i < n; i++) y[i] = rp_expf(x[i] * 0.25f);
    put(f, y, n);
    rp_gelu_tanh(y, x, n); put(f, y, n);
    rp_gelu_erf(y, x, n); put(f, y, n);
    rp_silu(y, x, n); put(f, y, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    rp_softmax_rows(y, 512, 512); put(f, y, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    rp_softmax_rows(y, 2048, 128); put(f, y, n);
    rp_layernorm(y, x, x + 1000, x + 3000, 256, 1024, 1e-6f); put(f, y, n);
    rp_layernorm(y, x, NULL, NULL, 1024, 256, 1e-6f); put(f, y, n);
    rp_rmsnorm(y, x, x + 5, 512, 512, 1e-6f); put(f, y, n);
    rp_groupnorm(y, x, x + 7, x + 9, 2, 64, 2048, 8, 1e-6f); put(f, y, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    rp_modulate(y, x + 11, x + 13, 512, 4, 128, 512); put(f, y, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    rp_gated_add(y, x + 17, 512, x + 19, 4, 128, 512); put(f, y, n);
    for (size_t i = 0; i < n; i++) y[i] = x[i];
    rp_add(y, x + 23, n - 23); put(f, y, n);
    rp_patchify(y, x, 4, 4, 128, 128, 2); put(f, y, n);
    rp_unpatchify(z, y, 4, 4, 128, 128, 2); put(f, z, n);
    rp_pos_embed_2d_sincos(y, 1024, 16, 16); put(f, y, 16 * 16 * 1024);
    float t[8] = {0, 1, 17.5f, 250, 499.25f, 750, 998, 999};
    rp_timestep_embedding(y, t, 8, 256, 10000.f, 0.f); put(f, y, 8 * 256);
    rp_upsample_nearest2x(y, x, 1, 16, 64, 64); put(f, y, n);
    /* the invariant GEMM (numerics: invariant): its micro-kernel is ours too, and
     * claims the same bits everywhere (AVX-512 vfmadd, AVX2 vfmadd, glibc's fmaf);
     * the two SIMD levels also pick different panel widths (32 / 16 lanes) */
    {
        const int M = 37, N = 45, K = 300;
        for (int t = 0; t < 4; t++) {
            int tA = t & 1, tB = t >> 1;
            rp_gemm_invariant(tA, tB, M, N, K, 1.0f, x, tA ? M : K, x + 20000, tB ? K : N, 0.0f, y,
                              N, 2);
            put(f, y, (size_t)M * N);
            for (int i = 0; i < M * N; i++) z[i] = x[50000 + i];
            rp_gemm_invariant(tA, tB, M, N, K, 0.5f, x, tA ? M : K, x + 20000, tB ? K : N, 0.25f, z,
                              N, 1);
            put(f, z, (size_t)M * N);
        }
        rp_ctx ctx = rp_ctx_default();
        ctx.numerics = RP_NUMERICS_INVARIANT;
        ctx.precision = RP_PREC_BF16;
        ctx.reduce_split = 1;
        rp_gemm(&ctx, 0, 1, M, N, K, 1.0f, x, K, x + 20000, K, 0.0f, y, N);
        put(f, y, (size_t)M * N);
    }
    /* attention variants: their row/tile code is ours (the GEMMs inside are
     * OpenBLAS's, the same kernel for every dump on one host) */
    {
        const int B = 1, H = 2, T = 100, D = 64;
        const size_t m = (size_t)B * H * T * D;
        uint8_t mask[100];
        for (int i = 0; i < T; i++) mask[i] = (uint8_t)(i % 9 != 4);
        const rp_attn_kind kinds[] = {RP_ATTN_MATH, RP_ATTN_SPLIT, RP_ATTN_SUBQUAD, RP_ATTN_FLASH};
        for (int k = 0; k < 4; k++) {
            rp_ctx ctx = rp_ctx_default();
            ctx.attn.kind = kinds[k];
            if (kinds[k] != RP_ATTN_MATH) ctx.attn.q_chunk = 32;
            if (kinds[k] == RP_ATTN_SUBQUAD || kinds[k] == RP_ATTN_FLASH) ctx.attn.kv_chunk = 24;
            rp_error err = {0};
            if (rp_attention(&ctx, y, x, x + m, x + 2 * m, mask, B, H, T, T, D, 0.125f, &err)) {
                fprintf(stderr, "attention: %s\n", err.msg);
                return 1;
            }
            put(f, y, m);
        }
    }
    /* the canonical attention (numerics invariant): all our own float code, vector and
     * scalar paths (blocks of 64, 16, 4 and 1 keys; a last segment no layout splits: blocks
     * of 64 and 11; a partial column chunk at D 72) */
    {
        const int B = 1, H = 1, T = 768, D = 72, seg[5] = {512, 128, 32, 21, 75};
        const size_t m = (size_t)B * H * T * D;
        uint8_t mask[768];
        for (int i = 0; i < T; i++) mask[i] = (uint8_t)(i % 11 != 3);
        rp_ctx ctx = rp_ctx_default();
        rp_error err = {0};
        if (rp_attention_canonical(&ctx, y, x, x + m, x + 2 * m, mask, B, H, T, T, D, 0.125f, seg, 5, 4, &err)) {
            fprintf(stderr, "canonical attention: %s\n", err.msg);
            return 1;
        }
        put(f, y, m);
    }
    return fclose(f) == 0 ? 0 : 1;
}
