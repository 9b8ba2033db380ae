/* ops.c — CPU operators over plain float buffers (everything in ops.h except
 * GEMM, nn.Linear and the scalar conversions, which are in gemm.c).
 *
 * Precision policy: reductions (norm statistics, softmax sums) accumulate in
 * double; transcendental activations are evaluated in double and rounded once.
 * The DiT elementwise ops (modulate, gated add) are fp32 in exactly the order
 * torch evaluates them, because the reference is torch in fp32. Plain loops;
 * the only threads are OpenBLAS's. */
#include "ops.h"
#include "fastmath.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *ops_alloc(size_t nfloat) {
    void *p = malloc(nfloat ? nfloat * sizeof(float) : 1);
    if (!p) { /* void ops have no error path (ops.h); fail loudly where it happened */
        fprintf(stderr, "repro: out of memory allocating %zu floats of op scratch\n", nfloat);
        abort();
    }
    return p;
}

/* ---- normalisation ------------------------------------------------------------- */

/* Mean and biased variance of x (n), two-pass in double: the second pass sums
 * (x - mean)^2, which does not cancel catastrophically like E[x^2] - mean^2. */
static void mean_var(const float *x, size_t n, double *mean, double *var) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i];
    double m = s / (double)n;
    double v = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - m;
        v += d * d;
    }
    *mean = m;
    *var = v / (double)n;
}

/* out (N, C), x (N, C), w (C) or NULL, b (C) or NULL. y = (x - mean) * rstd in
 * double, affine in double, one rounding to float. w and b are independent
 * (either may be NULL; torch has both or neither). out may alias x: each row's
 * statistics are read before any of its outputs is written. */
void rp_layernorm(float *out, const float *x, const float *w, const float *b,
                  int N, int C, float eps) {
    assert(N >= 0 && C > 0);
    for (int i = 0; i < N; i++) {
        const float *xr = x + (size_t)i * C;
        float *o = out + (size_t)i * C;
        double mean, var;
        mean_var(xr, (size_t)C, &mean, &var);
        double rstd = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++) {
            double y = ((double)xr[c] - mean) * rstd;
            if (w) y *= w[c];
            if (b) y += b[c];
            o[c] = (float)y;
        }
    }
}

/* out (N, C, HW), x (N, C, HW), w (C) or NULL, b (C) or NULL. Group g of image n
 * is channels [g*C/G, (g+1)*C/G), a contiguous block of (C/G)*HW floats. */
void rp_groupnorm(float *out, const float *x, const float *w, const float *b,
                  int N, int C, int HW, int G, float eps) {
    assert(N >= 0 && C > 0 && HW > 0 && G > 0 && C % G == 0);
    int Cg = C / G;
    size_t gsize = (size_t)Cg * HW;
    for (int n = 0; n < N; n++) {
        for (int g = 0; g < G; g++) {
            size_t off = ((size_t)n * C + (size_t)g * Cg) * HW;
            double mean, var;
            mean_var(x + off, gsize, &mean, &var);
            double rstd = 1.0 / sqrt(var + (double)eps);
            for (int cc = 0; cc < Cg; cc++) {
                int c = g * Cg + cc;
                const float *xc = x + off + (size_t)cc * HW;
                float *oc = out + off + (size_t)cc * HW;
                double wc = w ? w[c] : 1.0, bc = b ? b[c] : 0.0;
                for (int i = 0; i < HW; i++)
                    oc[i] = (float)(((double)xc[i] - mean) * rstd * wc + bc);
            }
        }
    }
}

/* out (N, C), x (N, C), w (C) or NULL. mean(x^2) in double. */
void rp_rmsnorm(float *out, const float *x, const float *w, int N, int C, float eps) {
    assert(N >= 0 && C > 0);
    for (int i = 0; i < N; i++) {
        const float *xr = x + (size_t)i * C;
        float *o = out + (size_t)i * C;
        double ss = 0.0;
        for (int c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
        double r = 1.0 / sqrt(ss / C + (double)eps);
        for (int c = 0; c < C; c++) {
            double y = xr[c] * r;
            if (w) y *= w[c];
            o[c] = (float)y;
        }
    }
}

/* ---- activations --------------------------------------------------------------- */

/* GELU(tanh): 0.5 x (1 + tanh(z)), z = sqrt(2/pi) (x + 0.044715 x^3), evaluated
 * in fp32 through the identity 0.5 (1 + tanh(z)) = 1 / (1 + exp(-2z)): the same
 * function without the cancellation of 1 + tanh(z) for z << 0. fp32 with
 * rp_expf (not double with libm exp) because the MLP applies it to B*T*4C
 * values per block — it was 13% of a DiT-XL forward — and the loop vectorises.
 * Error: z carries <= 4u relative (x^3, scale, add, scale; the add has no
 * cancellation), exp(-2z) then 2|z|*4u + 2 ulp, 1 + e and the division 1u each;
 * the quotient's sensitivity to e is < 1, so |err| <= (8|z| + 6) u |ref|.
 * x >> 0 gives x, x << 0 gives x / Inf = -0, as the limits. */
RP_SIMD_CLONES
void rp_gelu_tanh(float *out, const float *x, size_t n) {
    const float k = 0.7978845608f;   /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float z = k * (v + 0.044715f * (v * v * v));
        out[i] = v / (1.0f + rp_expf(-2.0f * z));
    }
}

/* exact GELU: 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2), in double;
 * erfc keeps relative accuracy in the x << 0 tail where 1 + erf cancels. */
void rp_gelu_erf(float *out, const float *x, size_t n) {
    const double r = 0.7071067811865476;   /* 1/sqrt(2) */
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        out[i] = (float)(0.5 * v * erfc(-v * r));
    }
}

/* x / (1 + exp(-x)) in fp32 with rp_expf: exp(-x) = +Inf for x < -88.7 gives
 * x / Inf = -0, the right limit; -Inf gives NaN as torch. */
RP_SIMD_CLONES
void rp_silu(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        out[i] = v / (1.0f + rp_expf(-v));
    }
}

/* x (rows, cols) in place. e_j = rp_expf(x_j - max) in float (x_j - max <= 0 so
 * no overflow; fp32 exp keeps attention's Tq*Tk exps cheap), sum of e_j in
 * double, then y_j = (float)(e_j / sum) in double: one rounding after the
 * division. A row that is entirely -Inf (every key masked) becomes zeros, not
 * NaN; a row containing +Inf or NaN gives NaN as torch does. */
RP_SIMD_CLONES
void rp_softmax_rows(float *x, int rows, int cols) {
    assert(rows >= 0 && cols >= 0);
    for (int r = 0; r < rows; r++) {
        float *row = x + (size_t)r * cols;
        /* max as 8 independent lanes: a single running max is a 4-cycle
         * dependency per element. NaNs are skipped in any order (the compare
         * is false), and which signed zero wins cannot change x - max. */
        float m8[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                       -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        int jm = 0;
        for (; jm + 8 <= cols; jm += 8)
            for (int q = 0; q < 8; q++) m8[q] = row[jm + q] > m8[q] ? row[jm + q] : m8[q];
        for (; jm < cols; jm++) m8[0] = row[jm] > m8[0] ? row[jm] : m8[0];
        float mx = m8[0];
        for (int q = 1; q < 8; q++) mx = m8[q] > mx ? m8[q] : mx;
        if (mx == -INFINITY) {
            int has_nan = 0;
            for (int j = 0; j < cols; j++) has_nan |= isnan(row[j]);
            for (int j = 0; j < cols; j++) row[j] = has_nan ? NAN : 0.0f;
            continue;
        }
        /* three passes so the exp and the division vectorise; the sum is a
         * fixed-order 4-way split in double (deterministic, latency-hidden) */
        for (int j = 0; j < cols; j++) row[j] = rp_expf(row[j] - mx);
        double s4[4] = {0.0, 0.0, 0.0, 0.0};
        int j = 0;
        for (; j + 4 <= cols; j += 4)
            for (int q = 0; q < 4; q++) s4[q] += row[j + q];
        for (; j < cols; j++) s4[0] += row[j];
        double sum = (s4[0] + s4[1]) + (s4[2] + s4[3]);
        /* sum >= 1 (the max contributes exp(0) = 1). Scaling by the double
         * reciprocal (two double roundings, ~2^-52, then one fp32 rounding) is
         * as accurate as dividing and vectorises far better than divpd. */
        const double inv = 1.0 / sum;
        for (int k = 0; k < cols; k++) row[k] = (float)((double)row[k] * inv);
    }
}

/* ---- DiT-style elementwise ----------------------------------------------------- */

/* x (B, T, C) in place; shift, scale (B, C) rows mod_stride apart. fp32 in torch's
 * order: (x * (1 + scale)) + shift, each op rounded. */
void rp_modulate(float *x, const float *shift, const float *scale, int mod_stride,
                 int B, int T, int C) {
    assert(mod_stride >= C);
    for (int b = 0; b < B; b++) {
        const float *sh = shift + (size_t)b * mod_stride;
        const float *sc = scale + (size_t)b * mod_stride;
        for (int t = 0; t < T; t++) {
            float *xr = x + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) {
                float s1 = 1.0f + sc[c];
                float xs = xr[c] * s1;
                xr[c] = xs + sh[c];
            }
        }
    }
}

/* x (B, T, C) += gate (B, C; row stride mod_stride) * y (B, T, C); torch's order
 * x + (gate * y). */
void rp_gated_add(float *x, const float *gate, int mod_stride, const float *y,
                  int B, int T, int C) {
    assert(mod_stride >= C);
    for (int b = 0; b < B; b++) {
        const float *g = gate + (size_t)b * mod_stride;
        for (int t = 0; t < T; t++) {
            float *xr = x + ((size_t)b * T + t) * C;
            const float *yr = y + ((size_t)b * T + t) * C;
            for (int c = 0; c < C; c++) {
                float gy = g[c] * yr[c];
                xr[c] = xr[c] + gy;
            }
        }
    }
}

void rp_add(float *y, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* ---- patches and embeddings ------------------------------------------------------ */

/* tokens (B, gh*gw, C*p*p), img (B, C, H, W), gh = H/p, gw = W/p:
 * tokens[b][gy*gw + gx][(c*p + py)*p + px] = img[b][c][gy*p + py][gx*p + px]. */
void rp_patchify(float *tokens, const float *img, int B, int C, int H, int W, int p) {
    assert(p > 0 && H % p == 0 && W % p == 0);
    int gh = H / p, gw = W / p, P = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < gh; gy++)
            for (int gx = 0; gx < gw; gx++) {
                float *tok = tokens + ((size_t)b * gh * gw + (size_t)gy * gw + gx) * P;
                for (int c = 0; c < C; c++)
                    for (int py = 0; py < p; py++) {
                        const float *src = img + (((size_t)b * C + c) * H + (size_t)gy * p + py) * W
                                         + (size_t)gx * p;
                        memcpy(tok + ((size_t)c * p + py) * p, src, (size_t)p * sizeof(float));
                    }
            }
}

/* img (B, C, H, W), tokens (B, gh*gw, p*p*C):
 * img[b][c][gy*p + py][gx*p + px] = tokens[b][gy*gw + gx][(py*p + px)*C + c]. */
void rp_unpatchify(float *img, const float *tokens, int B, int C, int H, int W, int p) {
    assert(p > 0 && H % p == 0 && W % p == 0);
    int gh = H / p, gw = W / p, P = C * p * p;
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < gh; gy++)
            for (int gx = 0; gx < gw; gx++) {
                const float *tok = tokens + ((size_t)b * gh * gw + (size_t)gy * gw + gx) * P;
                for (int py = 0; py < p; py++)
                    for (int px = 0; px < p; px++)
                        for (int c = 0; c < C; c++)
                            img[(((size_t)b * C + c) * H + (size_t)gy * p + py) * W
                                + (size_t)gx * p + px] = tok[((size_t)py * p + px) * C + c];
            }
}

/* out (gh*gw, D). MAE/DiT get_2d_sincos_pos_embed, in double like numpy:
 * token i*gw + j (row i of gh, column j of gw) gets
 *   [ sin(j*w_m), cos(j*w_m) | sin(i*w_m), cos(i*w_m) ],  m = 0 .. D/4-1,
 *   w_m = 1 / 10000^(m / (D/4)).
 * (MAE's meshgrid(grid_w, grid_h) puts the w coordinate in grid[0], which feeds
 * the first half.) */
void rp_pos_embed_2d_sincos(float *out, int D, int gh, int gw) {
    assert(D > 0 && D % 4 == 0 && gh > 0 && gw > 0);
    int Q = D / 4;
    double *omega = malloc((size_t)Q * sizeof(double));   /* (Q) */
    if (!omega) { fprintf(stderr, "repro: out of memory\n"); abort(); }
    for (int m = 0; m < Q; m++) omega[m] = 1.0 / pow(10000.0, (double)m / (double)Q);
    for (int i = 0; i < gh; i++)
        for (int j = 0; j < gw; j++) {
            float *o = out + ((size_t)i * gw + j) * D;
            for (int m = 0; m < Q; m++) {
                double aw = (double)j * omega[m], ah = (double)i * omega[m];
                o[m] = (float)sin(aw);
                o[Q + m] = (float)cos(aw);
                o[2 * Q + m] = (float)sin(ah);
                o[3 * Q + m] = (float)cos(ah);
            }
        }
    free(omega);
}

/* out (B, dim), t (B). fp32 throughout, in torch's op order, because t goes up
 * to ~1000 and a double-vs-float difference in t*f is then ~6e-5, close to the
 * 1e-4 parity bar:
 *   e_i  = (float)(-ln(max_period)) * (float)i        fp32 multiply
 *   e_i  = e_i / (float)(half - freq_shift)           fp32 divide
 *   f_i  = expf(e_i)
 *   a_i  = t * f_i                                    fp32 multiply
 *   out  = [cosf(a), sinf(a), 0 if dim is odd]
 * (torch uses its own vectorised exp/cos/sin, which may differ from glibc's
 * by about an ulp.) */
void rp_timestep_embedding(float *out, const float *t, int B, int dim,
                           float max_period, float freq_shift) {
    assert(B >= 0 && dim > 0 && max_period > 0.0f);
    int half = dim / 2;
    float neg_log = (float)(-log((double)max_period));
    float denom = (float)((double)half - (double)freq_shift);
    float *freqs = ops_alloc((size_t)(half > 0 ? half : 1));  /* (half) */
    for (int i = 0; i < half; i++) {
        float e = neg_log * (float)i;
        e = e / denom;
        freqs[i] = expf(e);
    }
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * dim;
        for (int i = 0; i < half; i++) {
            float a = t[b] * freqs[i];
            o[i] = cosf(a);
            o[half + i] = sinf(a);
        }
        if (dim % 2) o[dim - 1] = 0.0f;
    }
    free(freqs);
}

/* ---- convolution and resampling -------------------------------------------------- */

/* col (IC*k*k, (y1-y0)*Wo) from one image x (IC, H, W), output rows y0 <= oy < y1 only:
 * row (ic*k + ky)*k + kx, column (oy-y0)*Wo + ox holds x[ic][oy*s - pad + ky][ox*s - pad + kx],
 * 0 outside the image. At stride 1 the inside of a row is one contiguous copy. */
static void im2col_rows(float *col, const float *x, int IC, int H, int W, int k, int s, int pad,
                        int Wo, int y0, int y1) {
    size_t ncol = (size_t)(y1 - y0) * Wo;
    for (int ic = 0; ic < IC; ic++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *row = col + (((size_t)ic * k + ky) * k + kx) * ncol;
                /* the columns ox whose input column ox*s - pad + kx lies in [0, W) */
                int lo = pad - kx > 0 ? (pad - kx + s - 1) / s : 0;
                int hi = W + pad - kx > 0 ? (W + pad - kx + s - 1) / s : 0;
                if (hi > Wo) hi = Wo;
                if (lo > hi) lo = hi;
                for (int oy = y0; oy < y1; oy++) {
                    int iy = oy * s - pad + ky;
                    float *r = row + (size_t)(oy - y0) * Wo;
                    if (iy < 0 || iy >= H) {
                        memset(r, 0, (size_t)Wo * sizeof(float));
                        continue;
                    }
                    const float *xr = x + ((size_t)ic * H + iy) * W;
                    memset(r, 0, (size_t)lo * sizeof(float));
                    if (s == 1)
                        memcpy(r + lo, xr + lo - pad + kx, (size_t)(hi - lo) * sizeof(float));
                    else
                        for (int ox = lo; ox < hi; ox++) r[ox] = xr[ox * s - pad + kx];
                    memset(r + hi, 0, (size_t)(Wo - hi) * sizeof(float));
                }
            }
}

/* Output rows per im2col block: the block's col stays within CONV_COL_BLOCK floats (4 MB,
 * at least one row), so it is reused from the heap and the cache instead of being a fresh
 * mapping of up to IC*k*k*Ho*Wo floats per call (sd3-tiny's decoder at 256 px: 37 MB per
 * conv, faulted in page by page; that was most of a run's time). A fixed function of the
 * shape, so every run of the same conv makes the same GEMM calls. */
#define CONV_COL_BLOCK ((size_t)1 << 20)

/* out (N, OC, Ho, Wo), in (N, IC, H, W), w (OC, IC, k, k), b (OC) or NULL;
 * Ho = (H + 2*pad - k)/s + 1 (floor), likewise Wo. Per image and block of output rows:
 * out_blk (OC, rows*Wo) = w (OC, IC*k*k) @ col (IC*k*k, rows*Wo) [+ b, pre-filled with
 * beta = 1 as torch's CPU slow_conv2d/addmm]. Every output element is one dot product
 * of length IC*k*k whichever block holds it. A 1x1 stride-1 unpadded conv skips im2col
 * (col would equal the image). Scratch: one block's col. */
void rp_conv2d(const rp_ctx *ctx, float *out, const float *in, const float *w, const float *b,
               int N, int IC, int H, int W, int OC, int k, int s, int pad) {
    assert(N >= 0 && IC > 0 && OC > 0 && k > 0 && s > 0 && pad >= 0);
    assert(H + 2 * pad >= k && W + 2 * pad >= k);
    int Ho = (H + 2 * pad - k) / s + 1, Wo = (W + 2 * pad - k) / s + 1;
    int Kd = IC * k * k, HWo = Ho * Wo;
    int direct = (k == 1 && s == 1 && pad == 0);
    size_t per_row = (size_t)Kd * Wo;
    int rows = per_row >= CONV_COL_BLOCK ? 1 : (int)(CONV_COL_BLOCK / per_row);
    if (rows > Ho) rows = Ho;
    float *col = direct ? NULL : ops_alloc(per_row * rows);   /* (IC*k*k, rows*Wo) */
    for (int n = 0; n < N; n++) {
        const float *x = in + (size_t)n * IC * H * W;
        float *o = out + (size_t)n * OC * HWo;
        float beta = 0.0f;
        if (b) {
            for (int oc = 0; oc < OC; oc++)
                for (int i = 0; i < HWo; i++) o[(size_t)oc * HWo + i] = b[oc];
            beta = 1.0f;
        }
        if (direct) {
            rp_gemm(ctx, 0, 0, OC, HWo, Kd, 1.0f, w, Kd, x, HWo, beta, o, HWo);
            continue;
        }
        for (int y0 = 0; y0 < Ho; y0 += rows) {
            int y1 = y0 + rows < Ho ? y0 + rows : Ho, ncol = (y1 - y0) * Wo;
            im2col_rows(col, x, IC, H, W, k, s, pad, Wo, y0, y1);
            rp_gemm(ctx, 0, 0, OC, ncol, Kd, 1.0f, w, Kd, col, ncol, beta, o + (size_t)y0 * Wo, HWo);
        }
    }
    free(col);
}

/* out (N, C, 2H, 2W), in (N, C, H, W): out[.., y, x] = in[.., y/2, x/2]. */
void rp_upsample_nearest2x(float *out, const float *in, int N, int C, int H, int W) {
    size_t planes = (size_t)N * C;
    for (size_t pl = 0; pl < planes; pl++) {
        const float *src = in + pl * H * W;
        float *dst = out + pl * 4 * H * W;
        for (int y = 0; y < H; y++) {
            float *d0 = dst + (size_t)(2 * y) * 2 * W;
            const float *s = src + (size_t)y * W;
            for (int x = 0; x < W; x++) d0[2 * x] = d0[2 * x + 1] = s[x];
            memcpy(d0 + 2 * W, d0, (size_t)2 * W * sizeof(float)); /* row 2y+1 = row 2y */
        }
    }
}

/* ---- head layout --------------------------------------------------------------------- */

/* qkv (B, T, 3, H, D) -> q, k, v (B, H, T, D) */
void rp_split_qkv_heads(float *q, float *k, float *v, const float *qkv, int B, int T, int H, int D) {
    float *dst[3] = {q, k, v};
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int which = 0; which < 3; which++)
                for (int h = 0; h < H; h++) {
                    const float *src = qkv + ((((size_t)b * T + t) * 3 + which) * H + h) * D;
                    float *d = dst[which] + (((size_t)b * H + h) * T + t) * D;
                    memcpy(d, src, (size_t)D * sizeof(float));
                }
}

/* x (B, T, H, D) -> out (B, H, T, D) */
void rp_to_heads(float *out, const float *x, int B, int T, int H, int D) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                memcpy(out + (((size_t)b * H + h) * T + t) * D,
                       x + (((size_t)b * T + t) * H + h) * D, (size_t)D * sizeof(float));
}

/* x (B, H, T, D) -> out (B, T, H, D) */
void rp_from_heads(float *out, const float *x, int B, int T, int H, int D) {
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++)
                memcpy(out + (((size_t)b * T + t) * H + h) * D,
                       x + (((size_t)b * H + h) * T + t) * D, (size_t)D * sizeof(float));
}
