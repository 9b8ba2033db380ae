// ops_image.cu — patches, layouts, a linear's bias rows, the timestep embedding and conv2d
// (im2col + cuBLAS) (cuda_ops.h has the contracts).
//
// The layout ops move floats and never compute with them, so they equal the CPU ops bit
// for bit. Most kernels use launch_grid.h's rows grid over (rows, cols): grid.x tiles the
// columns (adjacent threads touch adjacent floats of a row), grid.y the rows, both walked
// by stride loops, so any int sizes have a legal launch.
#include <cmath>

#include "cuda_common.h"
#include "cuda_ops.h"

namespace {

#define ARG_CHECK(cond, ...)                                           \
    do {                                                               \
        if (!(cond)) return RP_FAIL(err, RP_ERR_INVALID, __VA_ARGS__); \
    } while (0)

constexpr long long kIntMax = 0x7fffffffLL;

// ---- patches -------------------------------------------------------------------------------------

// rows (b, c, y) of img, x = column: tokens[b][gy*gw + gx][(c*p + py)*p + px] = img[b][c][y][x].
__global__ void patchify_kernel(float *tok, const float *img, int C, int H, int W, int p, int rows) {
    RP_CUDA_COL_LOOP(x, W) {
        const int gh = H / p, gw = W / p, P = C * p * p;
        const int gx = x / p, px = x % p;
        RP_CUDA_ROW_LOOP(r, rows) {
            const int y = r % H, bc = r / H, c = bc % C, b = bc / C;
            const int gy = y / p, py = y % p;
            tok[((size_t)b * gh * gw + (size_t)gy * gw + gx) * P + ((size_t)c * p + py) * p + px] =
                img[(size_t)r * W + x];
        }
    }
}

// rows (b, c, y) of img: img[b][c][y][x] = tokens[b][gy*gw + gx][(py*p + px)*C + c].
__global__ void unpatchify_kernel(float *img, const float *tok, int C, int H, int W, int p, int rows) {
    RP_CUDA_COL_LOOP(x, W) {
        const int gh = H / p, gw = W / p, P = C * p * p;
        const int gx = x / p, px = x % p;
        RP_CUDA_ROW_LOOP(r, rows) {
            const int y = r % H, bc = r / H, c = bc % C, b = bc / C;
            const int gy = y / p, py = y % p;
            img[(size_t)r * W + x] =
                tok[((size_t)b * gh * gw + (size_t)gy * gw + gx) * P + ((size_t)py * p + px) * C + c];
        }
    }
}

// rp_flux_unpack: img[b][c][y][x] = tokens[b][(y/2)*gw + x/2][(c*2 + y%2)*2 + x%2].
__global__ void flux_unpack_kernel(float *img, const float *tok, int C, int H, int W, int rows) {
    RP_CUDA_COL_LOOP(x, W) {
        const int gh = H / 2, gw = W / 2, P = 4 * C;
        RP_CUDA_ROW_LOOP(r, rows) {
            const int y = r % H, bc = r / H, c = bc % C, b = bc / C;
            img[(size_t)r * W + x] = tok[((size_t)b * gh * gw + (size_t)(y / 2) * gw + x / 2) * P +
                                         (size_t)(c * 2 + y % 2) * 2 + x % 2];
        }
    }
}

// rows (plane, y') of out (2H, 2W per plane): out[pl][y'][x'] = in[pl][y'/2][x'/2].
__global__ void upsample2x_kernel(float *out, const float *in, int H, int W, int rows) {
    RP_CUDA_COL_LOOP(x, 2 * W) RP_CUDA_ROW_LOOP(r, rows) {
        const int yo = r % (2 * H), pl = r / (2 * H);
        out[(size_t)r * 2 * W + x] = in[((size_t)pl * H + yo / 2) * W + x / 2];
    }
}

// ---- head layouts ----------------------------------------------------------------------------------

// rows (b, t, which, h) of qkv (B, T, 3, H, D), d = column.
__global__ void split_qkv_kernel(float *q, float *k, float *v, const float *qkv, int T, int H, int D, int rows) {
    RP_CUDA_COL_LOOP(d, D) RP_CUDA_ROW_LOOP(r, rows) {
        const int h = r % H, which = (r / H) % 3, bt = r / (3 * H), t = bt % T, b = bt / T;
        float *dst = which == 0 ? q : which == 1 ? k : v;
        dst[(((size_t)b * H + h) * T + t) * D + d] = qkv[(size_t)r * D + d];
    }
}

// rows (b, t, h) of x (B, T, H, D) -> out[b][h][s0 + t][d] of (B, H, S, D).
__global__ void to_heads_kernel(float *out, const float *x, int T, int H, int D, int S, int s0, int rows) {
    RP_CUDA_COL_LOOP(d, D) RP_CUDA_ROW_LOOP(r, rows) {
        const int h = r % H, bt = r / H, t = bt % T, b = bt / T;
        out[(((size_t)b * H + h) * S + s0 + t) * D + d] = x[(size_t)r * D + d];
    }
}

// rows (b, t, h) of out (B, T, ldo) columns h*D + d <- x[b][h][s0 + t][d] of (B, H, S, D).
__global__ void from_heads_kernel(float *out, int ldo, const float *x, int S, int s0, int T, int H, int D,
                                  int rows) {
    RP_CUDA_COL_LOOP(d, D) RP_CUDA_ROW_LOOP(r, rows) {
        const int h = r % H, bt = r / H, t = bt % T, b = bt / T;
        out[((size_t)b * T + t) * ldo + (size_t)h * D + d] = x[(((size_t)b * H + h) * S + s0 + t) * D + d];
    }
}

// out (cols, rows) = x (rows, cols)^T, or out += x^T (accumulate: one fp32 add each);
// 32 x 32 tiles through shared memory (33 columns: no bank conflicts), block (32, 8), on
// launch_grid.h's tiles grid (row tiles strided). Indices in 64 bits: a tile's last row
// or column may lie past INT_MAX.
__global__ void transpose_kernel(float *out, const float *x, int rows, int cols, int accumulate) {
    __shared__ float tile[32][33];
    const long long c0 = (long long)blockIdx.x * 32;
    RP_GRID_STRIDE_FOR(r0, blockIdx.y * 32, rows, gridDim.y * 32) {  // uniform per block
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long r = (long long)r0 + j, c = c0 + threadIdx.x;
            if (r < rows && c < cols) tile[j][threadIdx.x] = x[(size_t)r * cols + c];
        }
        __syncthreads();
        for (int j = threadIdx.y; j < 32; j += 8) {
            const long long c = c0 + j, r = (long long)r0 + threadIdx.x;  // out row c, column r
            if (r < rows && c < cols) {
                float *o = out + (size_t)c * rows + r;
                *o = accumulate ? __fadd_rn(*o, tile[threadIdx.x][j]) : tile[threadIdx.x][j];
            }
        }
        __syncthreads();
    }
}

rp_status transpose_launch(const char *op, float *out, const float *x, int rows, int cols, int accumulate,
                           cudaStream_t stream, rp_error *err) {
    rp_grid g;
    ARG_CHECK(rp_grid_tiles(rows, cols, 32, &g) == 0, "%s: %d rows of %d columns: each must be in 1..INT_MAX", op,
              rows, cols);
    RP_CUDA_LAUNCHED(err, (transpose_kernel<<<dim3(g.x, g.y, g.z), dim3(g.tx, g.ty, 1), 0, stream>>>(
                              out, x, rows, cols, accumulate)));
    return RP_OK;
}

// ---- timestep embedding ----------------------------------------------------------------------------------

constexpr int kMaxHostFreqs = 1000;  // 4000 bytes: the whole parameter block stays under 4 KiB

struct HostFreqs {
    float f[kMaxHostFreqs];
};

// rows b, column i in [0, half + dim % 2).
__global__ void tsemb_kernel(float *out, const float *t, int dim, int half, HostFreqs fr, int use_host,
                             float neg_log, float denom, int rows) {
    RP_CUDA_COL_LOOP(i, half + dim % 2) {
        float f = 0.0f;
        if (i < half)
            f = use_host ? fr.f[i] : (float)exp((double)__fdiv_rn(__fmul_rn(neg_log, (float)i), denom));
        RP_CUDA_ROW_LOOP(b, rows) {
            float *o = out + (size_t)b * dim;
            if (i == half) {
                o[dim - 1] = 0.0f;
                continue;
            }
            const float a = __fmul_rn(t[b], f);
            o[i] = (float)cos((double)a);
            o[half + i] = (float)sin((double)a);
        }
    }
}

// ---- conv2d ----------------------------------------------------------------------------------------------

// col (Kd, ncol) of one image x (IC, H, W): row (ic*k + ky)*k + kx, column j = oy*Wo + ox
// holds x[ic][oy*s - pad + ky][ox*s - pad + kx], 0 outside (ops.c im2col).
__global__ void im2col_kernel(float *col, const float *x, int H, int W, int k, int s, int pad, int Wo, int ncol,
                              int rows) {
    RP_CUDA_COL_LOOP(j, ncol) {
        const int oy = j / Wo, ox = j % Wo;
        RP_CUDA_ROW_LOOP(r, rows) {
            const int kx = r % k, ky = (r / k) % k, ic = r / (k * k);
            const int iy = oy * s - pad + ky, ix = ox * s - pad + kx;
            float v = 0.0f;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = x[((size_t)ic * H + iy) * W + ix];
            col[(size_t)r * ncol + j] = v;
        }
    }
}

// out (N*OC rows, HWo) = b[row % OC].
__global__ void bias_fill_kernel(float *out, const float *b, int OC, int HWo, int rows) {
    RP_CUDA_COL_LOOP(j, HWo) RP_CUDA_ROW_LOOP(r, rows) out[(size_t)r * HWo + j] = b[r % OC];
}

struct ConvShape {
    int Ho, Wo, HWo, Kd, direct;
};

// Validates the sizes; fills sh. Messages name `op`.
rp_status conv_shape(const char *op, int N, int IC, int H, int W, int OC, int k, int s, int pad, ConvShape *sh,
                     rp_error *err) {
    ARG_CHECK(N > 0 && IC > 0 && H > 0 && W > 0 && OC > 0,
              "%s: N = %d, IC = %d, H = %d, W = %d, OC = %d must all be > 0", op, N, IC, H, W, OC);
    ARG_CHECK(k > 0 && s > 0 && pad >= 0, "%s: kernel %d and stride %d must be > 0, padding %d >= 0", op, k, s,
              pad);
    ARG_CHECK((long long)H + 2LL * pad >= k && (long long)W + 2LL * pad >= k,
              "%s: kernel %d larger than the padded %d x %d input", op, k, H + 2 * pad, W + 2 * pad);
    const long long Ho = ((long long)H + 2LL * pad - k) / s + 1, Wo = ((long long)W + 2LL * pad - k) / s + 1;
    const long long Kd = (long long)IC * k * k, HWo = Ho * Wo;
    ARG_CHECK(HWo <= kIntMax && Kd <= kIntMax && (long long)H * W <= kIntMax,
              "%s: %lld output pixels or %lld reduction terms per pixel exceed INT_MAX", op, HWo, Kd);
    sh->Ho = (int)Ho;
    sh->Wo = (int)Wo;
    sh->HWo = (int)HWo;
    sh->Kd = (int)Kd;
    sh->direct = k == 1 && s == 1 && pad == 0;
    return RP_OK;
}

rp_status conv_body(cublasHandle_t handle, float *out, const float *in, const float *w, const float *b, int N,
                    int IC, int H, int W, int OC, int k, int s, int pad, const ConvShape &sh, float *col,
                    cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_conv2d";
    float beta = 0.0f;
    if (b) {
        rp_cuda_rows rg;
        RP_TRY(rp_cuda_rows_grid(op, (long long)N * OC, sh.HWo, &rg, err));
        RP_CUDA_LAUNCHED(err, (bias_fill_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, b, OC, sh.HWo, N * OC)));
        beta = 1.0f;
    }
    const float alpha = 1.0f;
    rp_cuda_rows rc;
    if (!sh.direct) RP_TRY(rp_cuda_rows_grid(op, sh.Kd, sh.HWo, &rc, err));
    for (int n = 0; n < N; n++) {
        const float *x = in + (size_t)n * IC * H * W;
        float *o = out + (size_t)n * OC * sh.HWo;
        const float *B = x;  // (Kd, HWo) row-major: the image itself for a 1x1 conv
        if (!sh.direct) {
            RP_CUDA_LAUNCHED(err, (im2col_kernel<<<rc.grid, rc.threads, 0, stream>>>(col, x, H, W, k, s, pad, sh.Wo,
                                                                                    sh.HWo, sh.Kd)));
            B = col;
        }
        // Row-major o (OC, HWo) = w (OC, Kd) @ B (Kd, HWo) is column-major
        // o^T (HWo, OC) = B^T (HWo, Kd) @ w^T (Kd, OC): B as the first operand, ld HWo.
        RP_CUBLAS_TRY(err, cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, sh.HWo, OC, sh.Kd, &alpha, B, CUDA_R_32F,
                                        sh.HWo, w, CUDA_R_32F, sh.Kd, &beta, o, CUDA_R_32F, sh.HWo,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return RP_OK;
}

// out[r][c] = bias[c]: a linear's bias preload (rp_cuda_fill_rows); a (rows, cols) grid.
__global__ void fill_rows_kernel(float *out, int ldo, const float *bias, int rows, int cols) {
    RP_CUDA_COL_LOOP(c, cols) {
        const float b = bias[c];
        RP_CUDA_ROW_LOOP(r, rows) out[(size_t)r * ldo + c] = b;
    }
}

// The checks patchify and unpatchify share.
rp_status check_patch_args(const char *op, const void *a, const void *b, int B, int C, int H, int W, int p,
                           rp_error *err) {
    ARG_CHECK(a && b, "%s: tokens and img (%p, %p) must be non-NULL device pointers", op, a, b);
    ARG_CHECK(B > 0 && C > 0 && H > 0 && W > 0 && p > 0, "%s: B = %d, C = %d, H = %d, W = %d, p = %d must be > 0",
              op, B, C, H, W, p);
    ARG_CHECK(H % p == 0 && W % p == 0, "%s: image %d x %d is not divisible by the patch size %d", op, H, W, p);
    return RP_OK;
}

}  // namespace

// ================================ C API ===========================================================

extern "C" rp_status rp_cuda_patchify(float *tokens, const float *img, int B, int C, int H, int W, int p,
                                      cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_patchify";
    RP_TRY(check_patch_args(op, tokens, img, B, C, H, W, p, err));
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * C * H, W, &rg, err));
    RP_CUDA_LAUNCHED(err, (patchify_kernel<<<rg.grid, rg.threads, 0, stream>>>(tokens, img, C, H, W, p, B * C * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_unpatchify(float *img, const float *tokens, int B, int C, int H, int W, int p,
                                        cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_unpatchify";
    RP_TRY(check_patch_args(op, tokens, img, B, C, H, W, p, err));
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * C * H, W, &rg, err));
    RP_CUDA_LAUNCHED(err, (unpatchify_kernel<<<rg.grid, rg.threads, 0, stream>>>(img, tokens, C, H, W, p,
                                                                                 B * C * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_flux_unpack(float *img, const float *tokens, int B, int C, int H, int W,
                                         cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_flux_unpack";
    ARG_CHECK(tokens && img, "%s: img %p and tokens %p must be non-NULL device pointers", op, (void *)img,
              (const void *)tokens);
    ARG_CHECK(B > 0 && C > 0 && H > 0 && W > 0, "%s: B = %d, C = %d, H = %d, W = %d must be > 0", op, B, C, H, W);
    ARG_CHECK(H % 2 == 0 && W % 2 == 0, "%s: latent %d x %d must be even (2x2 packing)", op, H, W);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * C * H, W, &rg, err));
    RP_CUDA_LAUNCHED(err, (flux_unpack_kernel<<<rg.grid, rg.threads, 0, stream>>>(img, tokens, C, H, W, B * C * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_upsample_nearest2x(float *out, const float *in, int N, int C, int H, int W,
                                                cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_upsample_nearest2x";
    ARG_CHECK(out && in, "%s: out %p and in %p must be non-NULL device pointers", op, (void *)out, (const void *)in);
    ARG_CHECK(N > 0 && C > 0 && H > 0 && W > 0, "%s: N = %d, C = %d, H = %d, W = %d must be > 0", op, N, C, H, W);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)N * C * 2 * H, 2LL * W, &rg, err));
    RP_CUDA_LAUNCHED(err, (upsample2x_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, in, H, W, N * C * 2 * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_split_qkv_heads(float *q, float *k, float *v, const float *qkv, int B, int T, int H,
                                             int D, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_split_qkv_heads";
    ARG_CHECK(q && k && v && qkv, "%s: q %p, k %p, v %p, qkv %p must be non-NULL device pointers", op, (void *)q,
              (void *)k, (void *)v, (const void *)qkv);
    ARG_CHECK(B > 0 && T > 0 && H > 0 && D > 0, "%s: B = %d, T = %d, H = %d, D = %d must be > 0", op, B, T, H, D);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * T * 3 * H, D, &rg, err));
    RP_CUDA_LAUNCHED(err, (split_qkv_kernel<<<rg.grid, rg.threads, 0, stream>>>(q, k, v, qkv, T, H, D,
                                                                               B * T * 3 * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_to_heads(float *out, const float *x, int B, int T, int H, int D, int S, int s0,
                                      cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_to_heads";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(B > 0 && T > 0 && H > 0 && D > 0, "%s: B = %d, T = %d, H = %d, D = %d must be > 0", op, B, T, H, D);
    ARG_CHECK(s0 >= 0 && (long long)s0 + T <= S, "%s: rows [%d, %lld) do not fit in S = %d", op, s0,
              (long long)s0 + T, S);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * T * H, D, &rg, err));
    RP_CUDA_LAUNCHED(err, (to_heads_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, x, T, H, D, S, s0, B * T * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_from_heads(float *out, int ldo, const float *x, int B, int S, int s0, int T, int H,
                                        int D, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_from_heads";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(B > 0 && T > 0 && H > 0 && D > 0, "%s: B = %d, T = %d, H = %d, D = %d must be > 0", op, B, T, H, D);
    ARG_CHECK(s0 >= 0 && (long long)s0 + T <= S, "%s: rows [%d, %lld) do not fit in S = %d", op, s0,
              (long long)s0 + T, S);
    ARG_CHECK((long long)ldo >= (long long)H * D, "%s: ldo = %d must be >= H*D = %lld", op, ldo, (long long)H * D);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, (long long)B * T * H, D, &rg, err));
    RP_CUDA_LAUNCHED(err, (from_heads_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, ldo, x, S, s0, T, H, D,
                                                                                B * T * H)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_transpose(float *out, const float *x, int rows, int cols, cudaStream_t stream,
                                       rp_error *err) {
    const char *op = "rp_cuda_transpose";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(rows > 0 && cols > 0, "%s: rows = %d and cols = %d must be > 0", op, rows, cols);
    ARG_CHECK(out != x, "%s: out must not alias x (not an in-place transpose)", op);
    return transpose_launch(op, out, x, rows, cols, 0, stream, err);
}

extern "C" rp_status rp_cuda_add_transposed(float *x, const float *y, int rows, int cols, cudaStream_t stream,
                                            rp_error *err) {
    const char *op = "rp_cuda_add_transposed";
    ARG_CHECK(x && y, "%s: x %p and y %p must be non-NULL device pointers", op, (void *)x, (const void *)y);
    ARG_CHECK(rows > 0 && cols > 0, "%s: rows = %d and cols = %d must be > 0", op, rows, cols);
    ARG_CHECK(x != y, "%s: x must not alias y", op);
    // x (rows, cols) += y^T: the transpose of y, which is (cols, rows).
    return transpose_launch(op, x, y, cols, rows, 1, stream, err);
}

extern "C" rp_status rp_cuda_timestep_embedding(float *out, const float *t, int B, int dim, float max_period,
                                                float freq_shift, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_timestep_embedding";
    ARG_CHECK(out && t, "%s: out %p and t %p must be non-NULL device pointers", op, (void *)out, (const void *)t);
    ARG_CHECK(B > 0 && dim > 0, "%s: B = %d and dim = %d must be > 0", op, B, dim);
    ARG_CHECK(max_period > 0.0f, "%s: max_period = %g must be > 0", op, (double)max_period);
    const int half = dim / 2;
    // rp_timestep_embedding's scalars and frequencies, on the host, in its operations
    const float neg_log = (float)(-log((double)max_period));
    const float denom = (float)((double)half - (double)freq_shift);
    HostFreqs fr;
    const int use_host = half <= kMaxHostFreqs;
    for (int i = 0; i < kMaxHostFreqs; i++) fr.f[i] = 0.0f;
    for (int i = 0; use_host && i < half; i++) {
        float e = neg_log * (float)i;
        e = e / denom;
        fr.f[i] = expf(e);
    }
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, B, (long long)half + dim % 2, &rg, err));
    RP_CUDA_LAUNCHED(err, (tsemb_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, t, dim, half, fr, use_host, neg_log,
                                                                           denom, B)));
    return RP_OK;
}

extern "C" size_t rp_cuda_conv2d_workspace_bytes(int IC, int H, int W, int k, int s, int pad) {
    ConvShape sh = {};
    rp_error e;
    if (conv_shape("rp_cuda_conv2d_workspace_bytes", 1, IC, H, W, 1, k, s, pad, &sh, &e) != RP_OK) return 0;
    return sh.direct ? 0 : (size_t)sh.Kd * (size_t)sh.HWo * sizeof(float);
}

extern "C" rp_status rp_cuda_conv2d(cublasHandle_t handle, float *out, const float *in, const float *w,
                                    const float *b, int N, int IC, int H, int W, int OC, int k, int s, int pad,
                                    void *workspace, size_t workspace_bytes, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_conv2d";
    ARG_CHECK(handle, "%s: cuBLAS handle is NULL", op);
    ARG_CHECK(out && in && w, "%s: out %p, in %p, w %p must be non-NULL device pointers", op, (void *)out,
              (const void *)in, (const void *)w);
    ConvShape sh = {};
    RP_TRY(conv_shape(op, N, IC, H, W, OC, k, s, pad, &sh, err));
    const size_t need = sh.direct ? 0 : (size_t)sh.Kd * (size_t)sh.HWo * sizeof(float);
    ARG_CHECK(workspace_bytes >= need && (need == 0 || workspace),
              "%s: workspace %p of %zu bytes, the %d x %d im2col matrix needs %zu", op, workspace, workspace_bytes,
              sh.Kd, sh.HWo, need);

    cudaStream_t old_stream;
    cublasPointerMode_t old_pm;
    cublasMath_t old_math;
    RP_CUBLAS_TRY(err, cublasGetStream(handle, &old_stream));
    RP_CUBLAS_TRY(err, cublasGetPointerMode(handle, &old_pm));
    RP_CUBLAS_TRY(err, cublasGetMathMode(handle, &old_math));
    // cublasSetStream also resets the handle's workspace: only when the stream changes
    if (old_stream != stream) RP_CUBLAS_TRY(err, cublasSetStream(handle, stream));
    rp_status st = RP_OK;
    cublasStatus_t bs = cublasSetPointerMode(handle, CUBLAS_POINTER_MODE_HOST);
    if (bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
    if (bs != CUBLAS_STATUS_SUCCESS)
        st = RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: cannot set the cuBLAS pointer / math mode: %s", op,
                     cublasGetStatusString(bs));
    else
        st = conv_body(handle, out, in, w, b, N, IC, H, W, OC, k, s, pad, sh, (float *)workspace, stream, err);
    // restore the caller's handle state; a failure here only matters if the op succeeded
    cublasStatus_t r1 = cublasSetMathMode(handle, old_math);
    cublasStatus_t r2 = cublasSetPointerMode(handle, old_pm);
    cublasStatus_t r3 = old_stream != stream ? cublasSetStream(handle, old_stream) : CUBLAS_STATUS_SUCCESS;
    if (st == RP_OK && (r1 != CUBLAS_STATUS_SUCCESS || r2 != CUBLAS_STATUS_SUCCESS || r3 != CUBLAS_STATUS_SUCCESS))
        st = RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: cannot restore the cuBLAS handle's stream / pointer / math mode",
                     op);
    return st;
}

extern "C" rp_status rp_cuda_fill_rows(float *out, int ldo, const float *bias, int rows, int cols,
                                       cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_fill_rows";
    ARG_CHECK(out && bias, "%s: out %p and bias %p must be non-NULL device pointers", op, (void *)out,
              (const void *)bias);
    ARG_CHECK(ldo >= cols, "%s: ldo %d < %d columns", op, ldo, cols);
    rp_cuda_rows rg;
    RP_TRY(rp_cuda_rows_grid(op, rows, cols, &rg, err));
    RP_CUDA_LAUNCHED(err, (fill_rows_kernel<<<rg.grid, rg.threads, 0, stream>>>(out, ldo, bias, rows, cols)));
    return RP_OK;
}
