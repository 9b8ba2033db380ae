/* cuda_ops.h — CUDA versions of the engine's non-GEMM operators (engine/ops.h,
 * the samplers' elementwise updates, FLUX RoPE), plus conv2d as im2col + cuBLAS.
 *
 * Conventions, for every function here:
 *   - every float / int pointer is a DEVICE pointer; shapes are in the comments,
 *     row-major, PyTorch order, exactly the layout of the CPU op it mirrors
 *     (named in each comment);
 *   - the work is enqueued on `stream` and nothing synchronises: a returned RP_OK
 *     means "launched", an execution fault shows at the caller's next sync;
 *   - sizes must be > 0 and pointers non-NULL (except the optional ones a comment
 *     marks "or NULL"); otherwise RP_ERR_INVALID naming the op and the value,
 *     before anything is launched. A launch failure is RP_ERR_UNSUPPORTED (see
 *     cuda_common.h). Callers skip empty row ranges themselves;
 *   - outputs may alias inputs only where a comment says so.
 *
 * Numerics (tests/gpu/test_cuda_ops.c checks each against its CPU op):
 *   - elementwise fp32 ops do the CPU op's IEEE operations in the CPU op's order
 *     with no FMA contraction (__fmul_rn / __fadd_rn), so they are bitwise equal
 *     to the CPU; GELU(tanh), SiLU and the softmax exps use rp_cuda_expf, the
 *     device copy of fastmath.h's rp_expf, so they are bitwise equal too;
 *   - reductions (norm statistics, softmax sums) accumulate in double as the CPU
 *     does, one block per row (group), each thread a fixed strided slice, then
 *     warp shuffles and shared memory in a fixed order: bitwise deterministic run
 *     to run, independent of the number of rows, and within one fp32 rounding of
 *     the CPU result; no atomics anywhere;
 *   - the samplers' updates are double per element on float inputs, as on the CPU,
 *     with the scalar coefficients computed on the host by the CPU formulas.
 *
 * C API (also included from C test files compiled by gcc); the device helpers at
 * the end are for the CUDA sources only. */
#ifndef REPRO_CUDA_OPS_H
#define REPRO_CUDA_OPS_H

#include <cuda_runtime.h>

#include "engine/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLAS's handle type (cublas_api.h declares the same typedef), so that this
 * header needs only cuda_runtime.h. */
typedef struct cublasContext *cublasHandle_t;

/* ---- activations (out may alias x) ------------------------------------------------ */

/* out (n) = GELU(x (n)), tanh form: x / (1 + rp_expf(-2z)), z = sqrt(2/pi)(x + 0.044715 x^3),
 * fp32 (rp_gelu_tanh; bitwise equal). */
rp_status rp_cuda_gelu_tanh(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err);

/* out (n) = exact GELU of x (n): 0.5 x erfc(-x / sqrt 2) in double, rounded once
 * (rp_gelu_erf; device erfc, so within one fp32 ulp). */
rp_status rp_cuda_gelu_erf(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err);

/* out (n) = x / (1 + rp_expf(-x)), x (n) (rp_silu; bitwise equal). */
rp_status rp_cuda_silu(float *out, const float *x, size_t n, cudaStream_t stream, rp_error *err);

typedef enum rp_cuda_act { RP_CUDA_ACT_GELU_TANH = 0, RP_CUDA_ACT_GELU_ERF, RP_CUDA_ACT_SILU } rp_cuda_act;

/* A strided activation: out (rows, ldo) columns [0, cols) = act(x (rows, ldx) columns
 * [0, cols)); ldo, ldx >= cols. FLUX's single block applies GELU to the MLP half of
 * its cat rows: x = out = cat + C, ldx = ldo = C + M, cols = M. out may alias x when
 * ldo == ldx. Same values as the contiguous ops. */
rp_status rp_cuda_activation_2d(rp_cuda_act act, float *out, int ldo, const float *x, int ldx, int rows,
                                int cols, cudaStream_t stream, rp_error *err);

/* ---- DiT-style elementwise (in place) ----------------------------------------------- */

/* x (B, T, C) = (x * (1 + scale[b])) + shift[b]; shift, scale (B, C) with row stride
 * mod_stride >= C floats (chunks of an adaLN output); every op rounded (rp_modulate). */
rp_status rp_cuda_modulate(float *x, const float *shift, const float *scale, int mod_stride, int B, int T,
                           int C, cudaStream_t stream, rp_error *err);

/* x (B, T, C) = x + (gate[b] * y); gate (B, C) with row stride mod_stride >= C,
 * y (B, T, C) (rp_gated_add). */
rp_status rp_cuda_gated_add(float *x, const float *gate, int mod_stride, const float *y, int B, int T, int C,
                            cudaStream_t stream, rp_error *err);

/* y (n) += x (n) (rp_add). */
rp_status rp_cuda_add(float *y, const float *x, size_t n, cudaStream_t stream, rp_error *err);

/* y (B, n) += x (n) for every b: DiT's `xs[b] += pos_embed` loop of rp_add calls. */
rp_status rp_cuda_add_bcast(float *y, const float *x, int B, size_t n, cudaStream_t stream, rp_error *err);

/* out (n) = (x (n) / div) + add in fp32, two roundings: the VAE's latent
 * `z / scaling_factor + shift_factor` (vae.c). out may alias x. */
rp_status rp_cuda_div_add(float *out, const float *x, float div, float add, size_t n, cudaStream_t stream,
                          rp_error *err);

/* out (n) = (float)((double)x (n) * c): Euler ancestral's c_in / VP-view scalings
 * (samplers.c). out may alias x. */
rp_status rp_cuda_scale_f64(float *out, const float *x, double c, size_t n, cudaStream_t stream, rp_error *err);

/* out (rows, ldo) columns [0, cols) = bias (cols) in every row: a linear's bias preload
 * (rp_linear_ld). ldo >= cols. */
rp_status rp_cuda_fill_rows(float *out, int ldo, const float *bias, int rows, int cols, cudaStream_t stream,
                            rp_error *err);

/* ---- FLUX RoPE ------------------------------------------------------------------------ */

/* x (B, NH, T, D) in place, cosb, sinb (T, D) (the tables flux.c's build_rope makes,
 * each value repeated for its pair), D even. For each pair (x0, x1) at j, j + 1:
 *   y0 = x0 cos[j] + (-x1) sin[j],  y1 = x1 cos[j+1] + x0 sin[j+1],
 * each product rounded before the sum (flux.c apply_rope; bitwise equal). */
rp_status rp_cuda_rope(float *x, const float *cosb, const float *sinb, int B, int NH, int T, int D,
                       cudaStream_t stream, rp_error *err);

/* ---- samplers: one step's elementwise update (engine/samplers/) ------------------------------
 * The scalar arguments are the CPU function's; out may alias any input. */

/* x0 (n) = ra x - rm1 eps, ra = sqrt(1/abar), rm1 = sqrt(1/abar - 1); x, eps (n);
 * abar in (0, 1] (rp_predict_x0). */
rp_status rp_cuda_predict_x0(float *x0, const float *x, const float *eps, double abar, size_t n,
                             cudaStream_t stream, rp_error *err);

/* x_prev (n) from x, eps (n) and noise (n) (NULL allowed when the step's sigma is 0):
 * rp_ddim_step's update; 0 < abar < 1, abar <= abar_prev <= 1, eta >= 0. */
rp_status rp_cuda_ddim_step(float *x_prev, const float *x, const float *eps, double abar, double abar_prev,
                            double eta, const float *noise, size_t n, cudaStream_t stream, rp_error *err);

/* x_prev (n) from x, eps (n), var_v (n) or NULL (learned-range variance), noise (n)
 * (used iff add_noise; NULL allowed otherwise): rp_ddpm_step(.., s, i, ..) with the
 * schedule read by the caller: abar = s->alphas_cumprod[i], abar_prev =
 * rp_schedule_abar_prev(s, i), beta = s->betas[i], min_log =
 * rp_schedule_posterior_logvar_clipped(s, i) (ignored unless add_noise), add_noise = i > 0.
 * exp() runs on the device (within one fp32 ulp of the CPU when var_v is given). */
rp_status rp_cuda_ddpm_step(float *x_prev, const float *x, const float *eps, const float *var_v, double abar,
                            double abar_prev, double beta, double min_log, int add_noise, const float *noise,
                            size_t n, cudaStream_t stream, rp_error *err);

/* x_next (n) from x, x0 (n), x0_last (n) or NULL (first order): rp_dpmpp_2m_step;
 * 0 < abar < 1, abar < abar_next <= 1, and 0 < abar_last < abar when x0_last is given.
 * abar_next == 1 copies x0. */
rp_status rp_cuda_dpmpp_2m_step(float *x_next, const float *x, const float *x0, const float *x0_last,
                                double abar_last, double abar, double abar_next, size_t n, cudaStream_t stream,
                                rp_error *err);

/* x_next (n) = x + eps dt [+ noise up] (x, eps, noise (n); noise NULL allowed when no
 * noise is added): rp_euler_a_step; sigma > 0, 0 <= sigma_next <= sigma, eta >= 0. */
rp_status rp_cuda_euler_a_step(float *x_next, const float *x, const float *eps, double sigma, double sigma_next,
                               double eta, const float *noise, size_t n, cudaStream_t stream, rp_error *err);

/* x_next (n) = x + (dt * v) in fp32, dt = (float)sigma_next - (float)sigma; x, v (n);
 * both sigmas float32 values (rp_flow_euler_step). */
rp_status rp_cuda_flow_euler_step(float *x_next, const float *x, const float *v, double sigma,
                                  double sigma_next, size_t n, cudaStream_t stream, rp_error *err);

/* v (n) = u + (s * (c - u)) in fp32, u = v_uncond (n), c = v_cond (n), s = (float)scale
 * (rp_flow_cfg). */
rp_status rp_cuda_flow_cfg(float *v, const float *v_uncond, const float *v_cond, double scale, size_t n,
                           cudaStream_t stream, rp_error *err);

/* ---- normalisation and softmax (one block per row; out may alias x) -------------------------- */

/* out (N, C) = (x (N, C) - mean) / sqrt(var + eps) [* w] [+ b]; w, b (C) or NULL
 * (independently). Biased variance, two-pass, all in double, one rounding
 * (rp_layernorm). eps >= 0. */
rp_status rp_cuda_layernorm(float *out, const float *x, const float *w, const float *b, int N, int C, float eps,
                            cudaStream_t stream, rp_error *err);

/* out (N, C) = x (N, C) / sqrt(mean(x^2) + eps) [* w]; w (C) or NULL; double (rp_rmsnorm).
 * eps >= 0. */
rp_status rp_cuda_rmsnorm(float *out, const float *x, const float *w, int N, int C, float eps,
                          cudaStream_t stream, rp_error *err);

/* out (N, C, HW) = x (N, C, HW) group-normalised over each (C/G, HW) block, then
 * * w[c] + b[c]; w, b (C) or NULL (1 and 0); C % G == 0; double (rp_groupnorm).
 * One block per (image, group). eps >= 0. */
rp_status rp_cuda_groupnorm(float *out, const float *x, const float *w, const float *b, int N, int C, int HW,
                            int G, float eps, cudaStream_t stream, rp_error *err);

/* out (rows, cols) = softmax of each row of x (rows, cols): e = rp_expf(x - max) in
 * fp32, the sum in double, out = (float)(e * (1 / sum)) (rp_softmax_rows, which works
 * in place: pass out == x for that). A row of only -Inf gives zeros (NaN if it also
 * holds a NaN); +Inf or NaN with a finite max gives NaN, as the CPU. */
rp_status rp_cuda_softmax_rows(float *out, const float *x, int rows, int cols, cudaStream_t stream,
                               rp_error *err);

/* ---- patches, layouts, embeddings ----------------------------------------------------------- */

/* img (B, C, H, W) -> tokens (B, (H/p)*(W/p), C*p*p), each token ordered (c, py, px)
 * (rp_patchify; FLUX's rp_flux_pack is p = 2). H % p == W % p == 0. */
rp_status rp_cuda_patchify(float *tokens, const float *img, int B, int C, int H, int W, int p,
                           cudaStream_t stream, rp_error *err);

/* tokens (B, (H/p)*(W/p), p*p*C) ordered (py, px, c) -> img (B, C, H, W)
 * (rp_unpatchify: DiT / SD3 final layer). */
rp_status rp_cuda_unpatchify(float *img, const float *tokens, int B, int C, int H, int W, int p,
                             cudaStream_t stream, rp_error *err);

/* tokens (B, (H/2)*(W/2), 4C) ordered (c, py, px) -> img (B, C, H, W), H and W even
 * (rp_flux_unpack). */
rp_status rp_cuda_flux_unpack(float *img, const float *tokens, int B, int C, int H, int W, cudaStream_t stream,
                              rp_error *err);

/* out (N, C, 2H, 2W) = nearest 2x upsampling of in (N, C, H, W) (rp_upsample_nearest2x). */
rp_status rp_cuda_upsample_nearest2x(float *out, const float *in, int N, int C, int H, int W,
                                     cudaStream_t stream, rp_error *err);

/* qkv (B, T, 3, H, D) -> q, k, v each (B, H, T, D) (rp_split_qkv_heads). */
rp_status rp_cuda_split_qkv_heads(float *q, float *k, float *v, const float *qkv, int B, int T, int H, int D,
                                  cudaStream_t stream, rp_error *err);

/* x (B, T, H, D) -> rows [s0, s0 + T) of every (b, h) of out (B, H, S, D); S >= s0 + T.
 * S = T, s0 = 0 is rp_to_heads; two calls (image rows at s0 = 0, text at s0 = T) are
 * sd3.c's joint_to_heads. Rows outside [s0, s0 + T) are not written. */
rp_status rp_cuda_to_heads(float *out, const float *x, int B, int T, int H, int D, int S, int s0,
                           cudaStream_t stream, rp_error *err);

/* rows [s0, s0 + T) of x (B, H, S, D) -> out (B, T, ldo), columns [0, H*D) of each row
 * (h*D + d); ldo >= H*D, S >= s0 + T. ldo = H*D, S = T, s0 = 0 is rp_from_heads;
 * ldo = C + M is flux.c's from_heads_ld; two calls are sd3.c's joint_from_heads. */
rp_status rp_cuda_from_heads(float *out, int ldo, const float *x, int B, int S, int s0, int T, int H, int D,
                             cudaStream_t stream, rp_error *err);

/* out (cols, rows) = x (rows, cols)^T (the VAE attention's (C, T) -> (T, C)). */
rp_status rp_cuda_transpose(float *out, const float *x, int rows, int cols, cudaStream_t stream, rp_error *err);

/* x (rows, cols) += y^T, y (cols, rows): the VAE attention's residual
 * x[c][t] += tok[t][c], one fp32 add per element. */
rp_status rp_cuda_add_transposed(float *x, const float *y, int rows, int cols, cudaStream_t stream,
                                 rp_error *err);

/* out (B, dim) = [cos(t f), sin(t f)] (+ a 0 when dim is odd), t (B), f_i = expf(e_i),
 * e_i = ((float)(-ln max_period) * i) / (float)(dim/2 - freq_shift), fp32 as
 * rp_timestep_embedding. The frequencies are computed on the host with libm's expf,
 * bitwise the CPU's, when dim/2 <= 1000 (every model here: 256), on the device
 * ((float)exp(double)) beyond; cos and sin are device double, rounded once (within
 * one ulp of libm's cosf / sinf). max_period > 0. */
rp_status rp_cuda_timestep_embedding(float *out, const float *t, int B, int dim, float max_period,
                                     float freq_shift, cudaStream_t stream, rp_error *err);

/* ---- convolution (im2col + cuBLAS) ------------------------------------------------------------ */

/* Bytes of workspace rp_cuda_conv2d needs: one image's im2col matrix
 * (IC*k*k, Ho*Wo) floats, or 0 for a 1x1 stride-1 unpadded conv (no im2col).
 * Returns 0 as well for invalid sizes (rp_cuda_conv2d reports those). */
size_t rp_cuda_conv2d_workspace_bytes(int IC, int H, int W, int k, int s, int pad);

/* out (N, OC, Ho, Wo) = conv2d(in (N, IC, H, W), w (OC, IC, k, k), b (OC) or NULL),
 * square kernel k, stride s, zero padding pad, Ho = (H + 2 pad - k)/s + 1 (likewise Wo)
 * (rp_conv2d). Per image: im2col into workspace (IC*k*k, Ho*Wo), then
 * out_n (OC, Ho*Wo) = w (OC, IC*k*k) @ col with cublasGemmEx, CUBLAS_COMPUTE_32F, the
 * bias pre-filled and added with beta = 1 as the CPU. One GEMM per image, so image n's
 * result does not depend on N. workspace (device, workspace_bytes >=
 * rp_cuda_conv2d_workspace_bytes(); may be NULL when that is 0). The handle's stream,
 * pointer mode and math mode are set for the call (stream, host scalars,
 * CUBLAS_DEFAULT_MATH: no TF32) and restored before returning. */
rp_status rp_cuda_conv2d(cublasHandle_t handle, float *out, const float *in, const float *w, const float *b,
                         int N, int IC, int H, int W, int OC, int k, int s, int pad, void *workspace,
                         size_t workspace_bytes, cudaStream_t stream, rp_error *err);

#ifdef __cplusplus
}
#endif

/* ---- device helpers (CUDA sources only) --------------------------------------------------------- */
#ifdef __CUDACC__
/* rp_cuda_expf (fastmath.h's rp_expf on the device) is in engine/cuda/cuda_common.h */
#endif

#endif
