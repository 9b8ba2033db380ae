/* test_cuda_models.c — whole generations on the CUDA device (engine/cuda/device_cuda.h)
 * against the CPU, per model family (dit-tiny, sd3-tiny, flux-tiny; 2 items, 3 steps,
 * decoded by the family's VAE):
 *   1. deterministic fp32, run twice on the GPU: latents and images bitwise identical;
 *   2. deterministic fp32 vs the CPU: NMSE of the final latents within
 *        NMSE <= (S * g * L * K * u)^2,   u = 2^-24,
 *      where one forward's relative error is at most L K u (L layers in series, each a
 *      dot product of at most K terms: the standard fp32 summation bound, any order),
 *      guidance with scale s turns two forwards into (1 + s) v_c - s v_u, amplifying by
 *      at most g = 2 s + 1, and each of the S steps adds its own; a wrong kernel, layout
 *      or pointer gives NMSE ~ 1, far above;
 *   3. fast mode, tf32, bf16: their NMSE against the CPU is printed (no bound asserted:
 *      the point is that a report can show it), and must be finite.
 * One line per family and run. Exit 0 pass, 1 fail, 77 without CUDA or a visible GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/device.h"
#include "engine/pipeline/pipeline.h"
#include "tests/common/small_gen.h"
#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/cuda_info.h"
#include "engine/cuda/device_cuda.h"
#endif

#ifndef REPRO_HAVE_CUDA
int main(void) {
    printf("test_cuda_models: built without CUDA: skipped\n");
    return 77;
}
#else

typedef struct family {
    const char *model;
    int L, K;   /* layers in series and the longest dot product (see the top) */
    double cfg; /* guidance scale (FLUX: embedded, no CFG amplification) */
} family;

/* Layers in series and the longest dot product, from the presets:
 *   dit-tiny  depth 4 x (adaLN, qkv, QK^T, PV, proj, fc1, fc2) + t-MLP 2 + x-embed + final 2
 *             = 33; K = fc2's 4 x 96 = 384
 *   sd3-tiny  depth 2 x (adaLN, qkv, QK^T, PV, proj, ff1, ff2) + embedders 4 + final 2 = 20;
 *             K = ff2's 4 x 64 = 256
 *   flux-tiny 2 double x 7 + 2 single x (adaLN, qkv+mlp, QK^T, PV, proj_out) + embedders 5
 *             + final 2 = 31; K = proj_out's 64 + 256 = 320 */
static const family FAMILIES[] = {
    {"dit-tiny", 33, 384, 4.0},
    {"sd3-tiny", 20, 256, 4.0},
    {"flux-tiny", 31, 320, 1.0},
};

static int generate(const char *model, double cfg, rp_device *dev, rp_gen_result *res) {
    rp_error err;
    if (small_generation(model, cfg, dev, res, &err) != RP_OK) {
        printf("%-10s %-28s ERROR %s\n", model, dev ? dev->name : "cpu", err.msg);
        return 0;
    }
    return 1;
}

static double nmse(const float *a, const float *ref, size_t n, int *finite) {
    double num = 0, den = 0;
    *finite = 1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) *finite = 0;
        const double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static rp_device *make(rp_cuda_prec p, rp_cuda_gemm_mode m) {
    rp_cuda_device_opts o = {"cuda", 0, p, m};
    rp_device *d = NULL;
    rp_error err;
    rp_error_clear(&err);
    if (rp_device_cuda_create(&o, &d, &err) != RP_OK) printf("device: %s\n", err.msg);
    return d;
}

int main(void) {
    if (rp_cuda_device_count() <= 0) {
        printf("test_cuda_models: no CUDA device visible: skipped\n");
        return 77;
    }
    const double u = ldexp(1.0, -24);
    int fails = 0;
    for (size_t f = 0; f < sizeof FAMILIES / sizeof *FAMILIES; f++) {
        const family *fa = &FAMILIES[f];
        rp_gen_result cpu, g1, g2;
        if (!generate(fa->model, fa->cfg, NULL, &cpu)) { fails++; continue; }
        const size_t n = (size_t)cpu.B * cpu.C * cpu.h * cpu.w;
        rp_device *d = make(RP_CUDA_PREC_FP32, RP_CUDA_GEMM_DETERMINISTIC);
        if (!d) return 1;
        int ok1 = generate(fa->model, fa->cfg, d, &g1), ok2 = ok1 && generate(fa->model, fa->cfg, d, &g2);
        rp_device_destroy(d);
        if (!ok1 || !ok2) { fails++; rp_gen_result_free(&cpu); continue; }
        const int same = !memcmp(g1.latents, g2.latents, n * sizeof(float)) &&
                         !memcmp(g1.rgb, g2.rgb, (size_t)g1.B * g1.H * g1.W * 3);
        printf("%-10s deterministic twice: %s\n", fa->model, same ? "bitwise identical PASS" : "DIFFER FAIL");
        fails += !same;
        const double g = fa->model[0] == 'f' ? 1.0 : 2 * fa->cfg + 1;
        const double bound = pow(3 * g * fa->L * fa->K * u, 2);
        int fin;
        const double e = nmse(g1.latents, cpu.latents, n, &fin);
        const int pass = fin && e <= bound;
        printf("%-10s fp32 deterministic vs cpu: latents nmse %.3e (bound %.3e) %s\n", fa->model, e, bound,
               pass ? "PASS" : "FAIL");
        fails += !pass;
        rp_gen_result_free(&g1);
        rp_gen_result_free(&g2);
        const struct { rp_cuda_prec p; rp_cuda_gemm_mode m; const char *name; } other[] = {
            {RP_CUDA_PREC_FP32, RP_CUDA_GEMM_FAST, "fp32 fast (tf32 allowed)"},
            {RP_CUDA_PREC_TF32, RP_CUDA_GEMM_DETERMINISTIC, "tf32 deterministic"},
            {RP_CUDA_PREC_BF16, RP_CUDA_GEMM_DETERMINISTIC, "bf16 deterministic"},
        };
        for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
            rp_device *o = make(other[i].p, other[i].m);
            rp_gen_result r;
            if (!o || !generate(fa->model, fa->cfg, o, &r)) { fails++; rp_device_destroy(o); continue; }
            const double eo = nmse(r.latents, cpu.latents, n, &fin);
            printf("%-10s %-24s vs cpu fp32: latents nmse %.3e%s\n", fa->model, other[i].name, eo,
                   fin ? "" : " NON-FINITE FAIL");
            fails += !fin;
            rp_gen_result_free(&r);
            rp_device_destroy(o);
        }
        rp_gen_result_free(&cpu);
    }
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
#endif
