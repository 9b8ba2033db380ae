/* ops_layout.c — the CPU side of the generalised device ops (ops.h, last section).
 * Data movement is exact; the arithmetic ones do the same fp32 operations in the
 * same order as the model code they came from (flux.c's RoPE, vae.c's latent
 * scaling), so moving a model onto them changes no bit. */
#include <assert.h>
#include <string.h>

#include "ops.h"

void rp_linear_ld(const rp_ctx *ctx, float *out, int ldo, const float *in, const rp_linear_w *w, int M) {
    assert(w && w->weight && ldo >= w->out && M >= 0);
    float beta = 0.0f;
    if (w->bias) {
        for (int i = 0; i < M; i++) memcpy(out + (size_t)i * ldo, w->bias, (size_t)w->out * sizeof(float));
        beta = 1.0f;
    }
    rp_gemm(ctx, 0, 1, M, w->out, w->in, 1.0f, in, w->in, w->weight, w->in, beta, out, ldo);
}

void rp_to_heads_rows(float *out, const float *x, int B, int T, int H, int D, int S, int s0) {
    assert(S >= s0 + T && s0 >= 0);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(out + (((size_t)b * H + h) * S + s0 + t) * D, x + (((size_t)b * T + t) * H + h) * D,
                       sizeof(float) * (size_t)D);
}

void rp_from_heads_rows(float *out, int ldo, const float *x, int B, int S, int s0, int T, int H, int D) {
    assert(S >= s0 + T && s0 >= 0 && ldo >= H * D);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                memcpy(out + ((size_t)b * T + t) * ldo + (size_t)h * D, x + (((size_t)b * H + h) * S + s0 + t) * D,
                       sizeof(float) * (size_t)D);
}

void rp_act_2d(int act, float *out, int ldo, const float *x, int ldx, int rows, int cols) {
    assert(ldo >= cols && ldx >= cols);
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * ldo;
        const float *i = x + (size_t)r * ldx;
        if (act == 0) rp_gelu_tanh(o, i, (size_t)cols);
        else if (act == 1) rp_gelu_erf(o, i, (size_t)cols);
        else rp_silu(o, i, (size_t)cols);
    }
}

void rp_transpose(float *out, const float *x, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) out[(size_t)c * rows + r] = x[(size_t)r * cols + c];
}

void rp_add_transposed(float *x, const float *y, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) x[(size_t)r * cols + c] += y[(size_t)c * rows + r];
}

void rp_div_add(float *out, const float *x, float div, float add, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] / div + add;
}

void rp_add_bcast(float *y, const float *x, int B, size_t n) {
    for (int b = 0; b < B; b++) rp_add(y + (size_t)b * n, x, n);
}

void rp_rope_pairs(float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D) {
    assert(D % 2 == 0);
    for (size_t bh = 0; bh < (size_t)B * NH; bh++)
        for (int t = 0; t < T; t++) {
            float *r = x + (bh * T + t) * D;
            const float *c = cosb + (size_t)t * D, *s = sinb + (size_t)t * D;
            for (int j = 0; j < D; j += 2) {
                float x0 = r[j], x1 = r[j + 1];
                float a0 = x0 * c[j], b0 = -x1 * s[j];
                float a1 = x1 * c[j + 1], b1 = x0 * s[j + 1];
                r[j] = a0 + b0;
                r[j + 1] = a1 + b1;
            }
        }
}

/* _pack_latents: view (B, C, H/2, 2, W/2, 2), permute (0, 2, 4, 1, 3, 5) — the
 * (c, py, px) patch order, which is exactly rp_patchify with p = 2. */
void rp_flux_pack(float *tokens, const float *img, int B, int C, int H, int W) {
    assert(H % 2 == 0 && W % 2 == 0);
    rp_patchify(tokens, img, B, C, H, W, 2);
}

/* _unpack_latents: view (B, H/2, W/2, C, 2, 2), permute (0, 3, 1, 4, 2, 5):
 * img[b][c][2gy + py][2gx + px] = tokens[b][gy * gw + gx][(c * 2 + py) * 2 + px].
 * (rp_unpatchify reads (py, px, c) order — DiT's — so it does not apply here.) */
void rp_flux_unpack(float *img, const float *tokens, int B, int C, int H, int W) {
    assert(H % 2 == 0 && W % 2 == 0);
    const int gh = H / 2, gw = W / 2, P = 4 * C;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    const float *tok = tokens + ((size_t)b * gh * gw + (size_t)(y / 2) * gw + x / 2) * P;
                    img[(((size_t)b * C + c) * H + y) * W + x] = tok[(c * 2 + y % 2) * 2 + x % 2];
                }
}
