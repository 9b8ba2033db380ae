// ops_elementwise.cu — activations, DiT modulate / gated add, adds, FLUX RoPE and the
// samplers' per-element updates (cuda_ops.h has the contracts).
//
// Bitwise parity with the CPU: every fp32 operation the CPU op does is written here as
// an explicit round-to-nearest intrinsic (__fmul_rn, __fadd_rn, ...) in the CPU's order,
// because nvcc otherwise contracts a * b + c into one FMA (one rounding instead of two;
// the CPU build has -ffp-contract=off). The samplers' double arithmetic likewise uses
// __dmul_rn / __dadd_rn, with the scalar coefficients computed on the host by the same
// formulas (and the same libm) as engine/samplers/*.c.
#include <cmath>
#include <cstring>

#include "cuda_common.h"
#include "cuda_ops.h"

namespace {

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (n > 0; launch_grid.h's flat shape).
unsigned grid_for(size_t n) {
    rp_grid g = {1, 1, 1, kThreads, 1};
    (void)rp_grid_flat(n, kThreads, 1LL << 20, &g);
    return g.x;
}


#define ARG_CHECK(cond, ...)                                       \
    do {                                                           \
        if (!(cond)) return RP_FAIL(err, RP_ERR_INVALID, __VA_ARGS__); \
    } while (0)

// ---- activations ----------------------------------------------------------------------------

__device__ __forceinline__ float gelu_tanh_1(float v) {
    const float k = 0.7978845608f;  // sqrt(2/pi), the CPU's literal
    float v3 = __fmul_rn(__fmul_rn(v, v), v);
    float z = __fmul_rn(k, __fadd_rn(v, __fmul_rn(0.044715f, v3)));
    return __fdiv_rn(v, __fadd_rn(1.0f, rp_cuda_expf(__fmul_rn(-2.0f, z))));
}

__device__ __forceinline__ float gelu_erf_1(float xf) {
    const double r = 0.7071067811865476;  // 1/sqrt(2)
    double v = (double)xf;
    return (float)__dmul_rn(__dmul_rn(0.5, v), erfc(__dmul_rn(-v, r)));
}

__device__ __forceinline__ float silu_1(float v) {
    return __fdiv_rn(v, __fadd_rn(1.0f, rp_cuda_expf(-v)));
}

template <int ACT>
__device__ __forceinline__ float act_1(float v) {
    if (ACT == RP_CUDA_ACT_GELU_TANH) return gelu_tanh_1(v);
    if (ACT == RP_CUDA_ACT_GELU_ERF) return gelu_erf_1(v);
    return silu_1(v);
}

template <int ACT>
__global__ void act_kernel(float *out, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = act_1<ACT>(x[i]);
}

// a rows grid over (rows, cols).
template <int ACT>
__global__ void act2d_kernel(float *out, int ldo, const float *x, int ldx, int rows, int cols) {
    RP_CUDA_COL_LOOP(c, cols) RP_CUDA_ROW_LOOP(r, rows) {
        out[(size_t)r * ldo + c] = act_1<ACT>(x[(size_t)r * ldx + c]);
    }
}

template <int ACT>
rp_status act_launch(const char *op, float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err) {
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    RP_CUDA_LAUNCHED(err, (act_kernel<ACT><<<grid_for(n), kThreads, 0, stream>>>(out, x, n)));
    return RP_OK;
}

// ---- DiT elementwise ---------------------------------------------------------------------------

// a rows grid over (B*T, C).
__global__ void modulate_kernel(float *x, const float *shift, const float *scale, int ms, int T, int rows, int C) {
    RP_CUDA_COL_LOOP(c, C) RP_CUDA_ROW_LOOP(r, rows) {
        int b = r / T;
        float s1 = __fadd_rn(1.0f, scale[(size_t)b * ms + c]);
        float *xp = x + (size_t)r * C + c;
        float xs = __fmul_rn(*xp, s1);
        *xp = __fadd_rn(xs, shift[(size_t)b * ms + c]);
    }
}

__global__ void gated_add_kernel(float *x, const float *gate, int ms, const float *y, int T, int rows, int C) {
    RP_CUDA_COL_LOOP(c, C) RP_CUDA_ROW_LOOP(r, rows) {
        int b = r / T;
        size_t i = (size_t)r * C + c;
        float gy = __fmul_rn(gate[(size_t)b * ms + c], y[i]);
        x[i] = __fadd_rn(x[i], gy);
    }
}

__global__ void add_kernel(float *y, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __fadd_rn(y[i], x[i]);
}

// y (B, n) += x (n): grid-stride over n, every b in turn (x read once per thread).
__global__ void add_bcast_kernel(float *y, const float *x, int B, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float xv = x[i];
        for (int b = 0; b < B; b++) y[(size_t)b * n + i] = __fadd_rn(y[(size_t)b * n + i], xv);
    }
}

__global__ void div_add_kernel(float *out, const float *x, float div, float add, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = __fadd_rn(__fdiv_rn(x[i], div), add);
}

__global__ void scale_f64_kernel(float *out, const float *x, double c, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (float)__dmul_rn((double)x[i], c);
}

// ---- RoPE -------------------------------------------------------------------------------------

// a rows grid over (B*NH*T, D/2); one thread per pair.
__global__ void rope_kernel(float *x, const float *cosb, const float *sinb, int T, int rows, int D) {
    RP_CUDA_COL_LOOP(jp, D / 2) RP_CUDA_ROW_LOOP(r, rows) {
        const int j = 2 * jp;
        int t = r % T;
        float *p = x + (size_t)r * D + j;
        const float *c = cosb + (size_t)t * D + j, *s = sinb + (size_t)t * D + j;
        float x0 = p[0], x1 = p[1];
        float a0 = __fmul_rn(x0, c[0]), b0 = __fmul_rn(-x1, s[0]);
        float a1 = __fmul_rn(x1, c[1]), b1 = __fmul_rn(x0, s[1]);
        p[0] = __fadd_rn(a0, b0);
        p[1] = __fadd_rn(a1, b1);
    }
}

// ---- samplers ---------------------------------------------------------------------------------

// out = (float)(a x - b y) in double: rp_predict_x0's ra x - rm1 eps.
__global__ void predict_x0_kernel(float *out, const float *x, const float *eps, double ra, double rm1, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = (float)__dsub_rn(__dmul_rn(ra, (double)x[i]), __dmul_rn(rm1, (double)eps[i]));
}

__global__ void ddim_kernel(float *xp, const float *x, const float *eps, const float *noise, double ra,
                            double rm1, double c0, double ce, double sigma, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const double e = (double)eps[i];
        const double x0 = __dsub_rn(__dmul_rn(ra, (double)x[i]), __dmul_rn(rm1, e));
        double v = __dadd_rn(__dmul_rn(c0, x0), __dmul_rn(ce, e));
        if (sigma > 0.0) v = __dadd_rn(v, __dmul_rn(sigma, (double)noise[i]));
        xp[i] = (float)v;
    }
}

__global__ void ddpm_kernel(float *xp, const float *x, const float *eps, const float *var_v, const float *noise,
                            double ra, double rm1, double coef1, double coef2, int add_noise, double min_log,
                            double max_log, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const double xj = (double)x[i];
        const double x0 = __dsub_rn(__dmul_rn(ra, xj), __dmul_rn(rm1, (double)eps[i]));
        double v = __dadd_rn(__dmul_rn(coef1, x0), __dmul_rn(coef2, xj));
        if (add_noise) {
            double logvar = min_log;
            if (var_v) {
                const double frac = __ddiv_rn(__dadd_rn((double)var_v[i], 1.0), 2.0);
                logvar = __dadd_rn(__dmul_rn(frac, max_log), __dmul_rn(__dsub_rn(1.0, frac), min_log));
            }
            v = __dadd_rn(v, __dmul_rn(exp(__dmul_rn(0.5, logvar)), (double)noise[i]));
        }
        xp[i] = (float)v;
    }
}

// first order: (float)(ratio x + cd x0); second: D = a x0 - b x0_last, (float)(ratio x + cd D).
__global__ void dpmpp_kernel(float *xn, const float *x, const float *x0, const float *x0l, double ratio, double cd,
                             double a, double b, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double D = (double)x0[i];
        if (x0l) D = __dsub_rn(__dmul_rn(a, (double)x0[i]), __dmul_rn(b, (double)x0l[i]));
        xn[i] = (float)__dadd_rn(__dmul_rn(ratio, (double)x[i]), __dmul_rn(cd, D));
    }
}

__global__ void euler_a_kernel(float *xn, const float *x, const float *eps, const float *noise, double dt, double up,
                               int add_noise, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double v = __dadd_rn((double)x[i], __dmul_rn((double)eps[i], dt));
        if (add_noise) v = __dadd_rn(v, __dmul_rn((double)noise[i], up));
        xn[i] = (float)v;
    }
}

__global__ void flow_euler_kernel(float *xn, const float *x, const float *v, float dt, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float p = __fmul_rn(dt, v[i]);
        xn[i] = __fadd_rn(x[i], p);
    }
}

__global__ void flow_cfg_kernel(float *v, const float *vu, const float *vc, float s, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float u = vu[i];
        const float d = __fsub_rn(vc[i], u);
        const float p = __fmul_rn(s, d);
        v[i] = __fadd_rn(u, p);
    }
}

// DiT-style (B, T, C) with a (B, C) operand of row stride ms.
rp_status btc_check(const char *op, int ms, int B, int T, int C, rp_error *err) {
    ARG_CHECK(B > 0 && T > 0 && C > 0, "%s: B = %d, T = %d, C = %d must all be > 0", op, B, T, C);
    ARG_CHECK(ms >= C, "%s: mod_stride %d must be >= C = %d", op, ms, C);
    ARG_CHECK((long long)B * T <= 0x7fffffffLL, "%s: B*T = %lld rows exceed INT_MAX", op, (long long)B * T);
    return RP_OK;
}

}  // namespace

// ================================ C API ===========================================================

extern "C" rp_status rp_cuda_gelu_tanh(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err) {
    return act_launch<RP_CUDA_ACT_GELU_TANH>("rp_cuda_gelu_tanh", out, x, n, stream, err);
}

extern "C" rp_status rp_cuda_gelu_erf(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err) {
    return act_launch<RP_CUDA_ACT_GELU_ERF>("rp_cuda_gelu_erf", out, x, n, stream, err);
}

extern "C" rp_status rp_cuda_silu(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err) {
    return act_launch<RP_CUDA_ACT_SILU>("rp_cuda_silu", out, x, n, stream, err);
}

extern "C" rp_status rp_cuda_activation_2d(rp_cuda_act act, float *out, int ldo, const float *x, int ldx, int rows,
                                           int cols, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_activation_2d";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(rows > 0 && cols > 0, "%s: rows = %d, cols = %d must be > 0", op, rows, cols);
    ARG_CHECK(ldo >= cols && ldx >= cols, "%s: ldo = %d and ldx = %d must be >= cols = %d", op, ldo, ldx, cols);
    rp_cuda_rows l;
    RP_TRY(rp_cuda_rows_grid(op, rows, cols, &l, err));
    switch (act) {
    case RP_CUDA_ACT_GELU_TANH:
        RP_CUDA_LAUNCHED(err, (act2d_kernel<RP_CUDA_ACT_GELU_TANH><<<l.grid, l.threads, 0, stream>>>(out, ldo, x, ldx,
                                                                                              rows, cols)));
        return RP_OK;
    case RP_CUDA_ACT_GELU_ERF:
        RP_CUDA_LAUNCHED(err, (act2d_kernel<RP_CUDA_ACT_GELU_ERF><<<l.grid, l.threads, 0, stream>>>(out, ldo, x, ldx,
                                                                                             rows, cols)));
        return RP_OK;
    case RP_CUDA_ACT_SILU:
        RP_CUDA_LAUNCHED(err, (act2d_kernel<RP_CUDA_ACT_SILU><<<l.grid, l.threads, 0, stream>>>(out, ldo, x, ldx, rows,
                                                                                         cols)));
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_INVALID, "%s: unknown activation %d", op, (int)act);
}

extern "C" rp_status rp_cuda_modulate(float *x, const float *shift, const float *scale, int mod_stride, int B,
                                      int T, int C, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_modulate";
    ARG_CHECK(x && shift && scale, "%s: x %p, shift %p, scale %p must be non-NULL device pointers", op, (void *)x,
              (const void *)shift, (const void *)scale);
    RP_TRY(btc_check(op, mod_stride, B, T, C, err));
    rp_cuda_rows l;
    RP_TRY(rp_cuda_rows_grid(op, B * T, C, &l, err));
    RP_CUDA_LAUNCHED(err, (modulate_kernel<<<l.grid, l.threads, 0, stream>>>(x, shift, scale, mod_stride, T, B * T,
                                                                            C)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_gated_add(float *x, const float *gate, int mod_stride, const float *y, int B, int T,
                                       int C, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_gated_add";
    ARG_CHECK(x && gate && y, "%s: x %p, gate %p, y %p must be non-NULL device pointers", op, (void *)x,
              (const void *)gate, (const void *)y);
    RP_TRY(btc_check(op, mod_stride, B, T, C, err));
    rp_cuda_rows l;
    RP_TRY(rp_cuda_rows_grid(op, B * T, C, &l, err));
    RP_CUDA_LAUNCHED(err, (gated_add_kernel<<<l.grid, l.threads, 0, stream>>>(x, gate, mod_stride, y, T, B * T, C)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_add(float *y, const float *x, size_t n, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_add";
    ARG_CHECK(y && x, "%s: y %p and x %p must be non-NULL device pointers", op, (void *)y, (const void *)x);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    RP_CUDA_LAUNCHED(err, (add_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, x, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_add_bcast(float *y, const float *x, int B, size_t n, cudaStream_t stream,
                                       rp_error *err) {
    const char *op = "rp_cuda_add_bcast";
    ARG_CHECK(y && x, "%s: y %p and x %p must be non-NULL device pointers", op, (void *)y, (const void *)x);
    ARG_CHECK(B > 0 && n > 0, "%s: B = %d and n = %zu must be > 0", op, B, n);
    RP_CUDA_LAUNCHED(err, (add_bcast_kernel<<<grid_for(n), kThreads, 0, stream>>>(y, x, B, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_div_add(float *out, const float *x, float div, float add, size_t n,
                                     cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_div_add";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    RP_CUDA_LAUNCHED(err, (div_add_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, x, div, add, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_scale_f64(float *out, const float *x, double c, size_t n, cudaStream_t stream,
                                       rp_error *err) {
    const char *op = "rp_cuda_scale_f64";
    ARG_CHECK(out && x, "%s: out %p and x %p must be non-NULL device pointers", op, (void *)out, (const void *)x);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    RP_CUDA_LAUNCHED(err, (scale_f64_kernel<<<grid_for(n), kThreads, 0, stream>>>(out, x, c, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_rope(float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D,
                                  cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_rope";
    ARG_CHECK(x && cosb && sinb, "%s: x %p, cosb %p, sinb %p must be non-NULL device pointers", op, (void *)x,
              (const void *)cosb, (const void *)sinb);
    ARG_CHECK(B > 0 && NH > 0 && T > 0 && D > 0, "%s: B = %d, NH = %d, T = %d, D = %d must all be > 0", op, B, NH,
              T, D);
    ARG_CHECK(D % 2 == 0, "%s: head dim D = %d must be even (rotation pairs)", op, D);
    const long long rows = (long long)B * NH * T;
    ARG_CHECK(rows <= 0x7fffffffLL, "%s: B*NH*T = %lld rows exceed INT_MAX", op, rows);
    rp_cuda_rows l;
    RP_TRY(rp_cuda_rows_grid(op, (int)rows, D / 2, &l, err));
    RP_CUDA_LAUNCHED(err, (rope_kernel<<<l.grid, l.threads, 0, stream>>>(x, cosb, sinb, T, (int)rows, D)));
    return RP_OK;
}

// ---- samplers (host scalars exactly as engine/samplers/*.c) ----------------------------------------

extern "C" rp_status rp_cuda_predict_x0(float *x0, const float *x, const float *eps, double abar, size_t n,
                                        cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_predict_x0";
    ARG_CHECK(x0 && x && eps, "%s: x0 %p, x %p, eps %p must be non-NULL device pointers", op, (void *)x0,
              (const void *)x, (const void *)eps);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK(abar > 0.0 && abar <= 1.0, "%s: abar = %.17g must be in (0, 1]", op, abar);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    RP_CUDA_LAUNCHED(err, (predict_x0_kernel<<<grid_for(n), kThreads, 0, stream>>>(x0, x, eps, ra, rm1, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_ddim_step(float *x_prev, const float *x, const float *eps, double abar,
                                       double abar_prev, double eta, const float *noise, size_t n,
                                       cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_ddim_step";
    ARG_CHECK(x_prev && x && eps, "%s: x_prev %p, x %p, eps %p must be non-NULL device pointers", op,
              (void *)x_prev, (const void *)x, (const void *)eps);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK(abar > 0.0 && abar < 1.0 && abar_prev >= abar && abar_prev <= 1.0,
              "%s: need 0 < abar < 1 and abar <= abar_prev <= 1 (abar = %.17g, abar_prev = %.17g)", op, abar,
              abar_prev);
    ARG_CHECK(eta >= 0.0, "%s: eta = %g must be >= 0", op, eta);
    // rp_ddim_sigma
    const double sigma = eta * sqrt((1.0 - abar_prev) / (1.0 - abar)) * sqrt(1.0 - abar / abar_prev);
    ARG_CHECK(sigma == 0.0 || noise, "%s: sigma = %g (eta %g) needs noise, got NULL", op, sigma, eta);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    const double c0 = sqrt(abar_prev);
    double ce2 = 1.0 - abar_prev - sigma * sigma;
    const double ce = ce2 > 0.0 ? sqrt(ce2) : 0.0;
    RP_CUDA_LAUNCHED(err, (ddim_kernel<<<grid_for(n), kThreads, 0, stream>>>(x_prev, x, eps, noise, ra, rm1, c0, ce,
                                                                             sigma, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_ddpm_step(float *x_prev, const float *x, const float *eps, const float *var_v,
                                       double abar, double abar_prev, double beta, double min_log, int add_noise,
                                       const float *noise, size_t n, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_ddpm_step";
    ARG_CHECK(x_prev && x && eps, "%s: x_prev %p, x %p, eps %p must be non-NULL device pointers", op,
              (void *)x_prev, (const void *)x, (const void *)eps);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK(abar > 0.0 && abar < 1.0 && abar_prev >= abar && abar_prev <= 1.0 && beta > 0.0 && beta < 1.0,
              "%s: need 0 < abar < 1, abar <= abar_prev <= 1, 0 < beta < 1 (abar = %.17g, abar_prev = %.17g, "
              "beta = %.17g)",
              op, abar, abar_prev, beta);
    ARG_CHECK(!add_noise || noise, "%s: add_noise is set but noise is NULL", op);
    const double ra = sqrt(1.0 / abar), rm1 = sqrt(1.0 / abar - 1.0);
    const double coef1 = beta * sqrt(abar_prev) / (1.0 - abar);
    const double coef2 = (1.0 - abar_prev) * sqrt(1.0 - beta) / (1.0 - abar);
    double max_log = 0.0;
    if (add_noise) max_log = log(beta);
    else min_log = 0.0;
    RP_CUDA_LAUNCHED(err, (ddpm_kernel<<<grid_for(n), kThreads, 0, stream>>>(x_prev, x, eps, var_v, noise, ra, rm1,
                                                                             coef1, coef2, add_noise ? 1 : 0,
                                                                             min_log, max_log, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_dpmpp_2m_step(float *x_next, const float *x, const float *x0, const float *x0_last,
                                           double abar_last, double abar, double abar_next, size_t n,
                                           cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_dpmpp_2m_step";
    ARG_CHECK(x_next && x && x0, "%s: x_next %p, x %p, x0 %p must be non-NULL device pointers", op,
              (void *)x_next, (const void *)x, (const void *)x0);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK(abar > 0.0 && abar < 1.0 && abar_next > abar && abar_next <= 1.0,
              "%s: need 0 < abar < 1 and abar < abar_next <= 1 (abar = %.17g, abar_next = %.17g)", op, abar,
              abar_next);
    if (abar_next >= 1.0) {  // sigma_next = 0: x_next = x0
        if (x_next != x0)
            RP_CUDA_TRY(err, cudaMemcpyAsync(x_next, x0, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
        return RP_OK;
    }
    // lambda_of(a) = 0.5 log(a / (1 - a))
    const double lam = 0.5 * log(abar / (1.0 - abar)), lam_next = 0.5 * log(abar_next / (1.0 - abar_next));
    const double h = lam_next - lam;
    ARG_CHECK(h > 0.0, "%s: step size h = %g must be > 0 (abar = %.17g, abar_next = %.17g)", op, h, abar, abar_next);
    const double ratio = sqrt(1.0 - abar_next) / sqrt(1.0 - abar);
    const double cd = -sqrt(abar_next) * expm1(-h);
    double a = 0.0, b = 0.0;
    if (x0_last) {
        ARG_CHECK(abar_last > 0.0 && abar_last < abar, "%s: abar_last = %.17g must be in (0, abar = %.17g)", op,
                  abar_last, abar);
        const double r = (lam - 0.5 * log(abar_last / (1.0 - abar_last))) / h;
        a = 1.0 + 1.0 / (2.0 * r);
        b = 1.0 / (2.0 * r);
    }
    RP_CUDA_LAUNCHED(err, (dpmpp_kernel<<<grid_for(n), kThreads, 0, stream>>>(x_next, x, x0, x0_last, ratio, cd, a,
                                                                              b, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_euler_a_step(float *x_next, const float *x, const float *eps, double sigma,
                                          double sigma_next, double eta, const float *noise, size_t n,
                                          cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_euler_a_step";
    ARG_CHECK(x_next && x && eps, "%s: x_next %p, x %p, eps %p must be non-NULL device pointers", op,
              (void *)x_next, (const void *)x, (const void *)eps);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK(sigma > 0.0 && sigma_next >= 0.0 && sigma_next <= sigma && eta >= 0.0,
              "%s: need sigma > 0, 0 <= sigma_next <= sigma, eta >= 0 (sigma = %.17g, sigma_next = %.17g, eta = %g)",
              op, sigma, sigma_next, eta);
    // rp_ancestral_sigmas
    double down, up;
    if (eta == 0.0) {
        down = sigma_next;
        up = 0.0;
    } else {
        up = eta * sqrt(sigma_next * sigma_next * (sigma * sigma - sigma_next * sigma_next) / (sigma * sigma));
        if (up > sigma_next) up = sigma_next;
        down = sqrt(sigma_next * sigma_next - up * up);
    }
    const int add_noise = sigma_next > 0.0 && up > 0.0;
    ARG_CHECK(!add_noise || noise, "%s: the step adds noise (up = %g) but noise is NULL", op, up);
    const double dt = down - sigma;
    RP_CUDA_LAUNCHED(err, (euler_a_kernel<<<grid_for(n), kThreads, 0, stream>>>(x_next, x, eps, noise, dt, up,
                                                                                add_noise, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_flow_euler_step(float *x_next, const float *x, const float *v, double sigma,
                                             double sigma_next, size_t n, cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_flow_euler_step";
    ARG_CHECK(x_next && x && v, "%s: x_next %p, x %p, v %p must be non-NULL device pointers", op, (void *)x_next,
              (const void *)x, (const void *)v);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    ARG_CHECK((double)(float)sigma == sigma && (double)(float)sigma_next == sigma_next,
              "%s: sigma = %.17g and sigma_next = %.17g must be float32 values", op, sigma, sigma_next);
    const float dt = (float)sigma_next - (float)sigma;
    RP_CUDA_LAUNCHED(err, (flow_euler_kernel<<<grid_for(n), kThreads, 0, stream>>>(x_next, x, v, dt, n)));
    return RP_OK;
}

extern "C" rp_status rp_cuda_flow_cfg(float *v, const float *v_uncond, const float *v_cond, double scale, size_t n,
                                      cudaStream_t stream, rp_error *err) {
    const char *op = "rp_cuda_flow_cfg";
    ARG_CHECK(v && v_uncond && v_cond, "%s: v %p, v_uncond %p, v_cond %p must be non-NULL device pointers", op,
              (void *)v, (const void *)v_uncond, (const void *)v_cond);
    ARG_CHECK(n > 0, "%s: n = %zu must be > 0", op, n);
    RP_CUDA_LAUNCHED(err, (flow_cfg_kernel<<<grid_for(n), kThreads, 0, stream>>>(v, v_uncond, v_cond, (float)scale,
                                                                                 n)));
    return RP_OK;
}
