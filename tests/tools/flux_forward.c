/* flux_forward.c — one FLUX forward on seeded inputs, dumped for the parity test.
 *
 * usage: flux_forward --preset flux-tiny|flux-dev --weights W.safetensors --out O.safetensors
 *                     [--write-weights] [--weight-seed S] [--double N] [--single N]
 *                     [--batch B] [--latent S | --height H --width W] [--text-len L]
 *                     [--seed S] [--mask] [--threads N] [--trace T.safetensors]
 *
 * --write-weights first writes synthetic weights for the (reduced-depth) preset to
 * --weights with rp_params_write_synthetic; the forward then loads that file, so the
 * reference reads exactly what C ran. Inputs are a pure function of --seed:
 *   x       rp_randn(seed, index 0) (B, 16, H, W)
 *   t       sigmoid(rp_randn(seed, index 1)) (B)          in (0, 1), like SD3/FLUX time sampling
 *   guidance 1 + 4 sigmoid(rp_randn(seed, index 2)) (B)   in (1, 5)
 *   context rp_randn(seed, index 3) (B, L, Dctx)
 *   pooled  rp_randn(seed, index 4) (B, Dpool)
 *   mask    with --mask: item b attends to its first max(1, L - 5b) text tokens (B, L) U8
 * Output file: those tensors plus "out" (B, 16, H, W), metadata preset, n_double,
 * n_single, height, width, text_len, weights, weight_seed, seed. Exit 0 ok, 1 failure,
 * 2 usage error. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/ctx.h"
#include "engine/error.h"
#include "engine/models/flux.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/trace.h"
#include "harness/cli/args.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int fail(const rp_error *err, int rc) {
    fprintf(stderr, "flux_forward: %s: %s (%s)\n", rp_status_name(err->code), err->msg, err->where);
    return rc;
}

static float sigmoid(float z) { return (float)(1.0 / (1.0 + exp(-(double)z))); }

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const char *preset = rp_arg_str(&a, "preset", NULL);
    const char *wpath = rp_arg_str(&a, "weights", NULL);
    const char *out_path = rp_arg_str(&a, "out", NULL);
    const char *trace_path = rp_arg_str(&a, "trace", NULL);
    int write_weights = rp_arg_flag(&a, "write-weights");
    int use_mask = rp_arg_flag(&a, "mask");
    long long wseed = rp_arg_int(&a, "weight-seed", 0);
    long long seed = rp_arg_int(&a, "seed", 0);
    long long n_double = rp_arg_int(&a, "double", -1);
    long long n_single = rp_arg_int(&a, "single", -1);
    long long batch = rp_arg_int(&a, "batch", 1);
    long long latent = rp_arg_int(&a, "latent", 0);
    long long height = rp_arg_int(&a, "height", 0);
    long long width = rp_arg_int(&a, "width", 0);
    long long text_len = rp_arg_int(&a, "text-len", -1);
    long long threads = rp_arg_int(&a, "threads", 0);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) return fail(&err, 2);
    if (!preset || !wpath || !out_path) {
        fprintf(stderr, "flux_forward: --preset, --weights and --out are required\n");
        return 2;
    }
    if (wseed < 0 || seed < 0 || batch < 1 || batch > 64 || threads < 0 || n_double < -1 || n_single < -1) {
        fprintf(stderr, "flux_forward: seeds must be >= 0, batch in 1..64, threads >= 0, depths >= 0\n");
        return 2;
    }

    rp_flux_config cfg;
    if (rp_flux_preset(preset, &cfg, &err) != RP_OK) return fail(&err, 2);
    if (rp_flux_set_depth(&cfg, (int)n_double, (int)n_single, &err) != RP_OK) return fail(&err, 2);
    const int B = (int)batch;
    const int H = (int)(height ? height : latent ? latent : cfg.sample_size);
    const int W = (int)(width ? width : latent ? latent : cfg.sample_size);
    const int L = (int)(text_len >= 0 ? text_len : cfg.text_len);
    if (H <= 0 || W <= 0 || H % 2 || W % 2 || H > 1024 || W > 1024 || L > 4096) {
        fprintf(stderr, "flux_forward: latent %d x %d must be even (<= 1024), text-len %d <= 4096\n", H, W, L);
        return 2;
    }

    rp_param_list l = {0};
    rp_flux_param_specs(&cfg, &l);
    const size_t n_params = rp_params_total(&l);
    char model_name[96];
    snprintf(model_name, sizeof model_name, "%s-d%d-s%d", cfg.preset, cfg.n_double, cfg.n_single);
    double t0 = now_s();
    if (write_weights) {
        if (rp_params_write_synthetic(&l, model_name, (uint64_t)wseed, wpath, &err) != RP_OK) {
            rp_params_free(&l);
            return fail(&err, 1);
        }
    }
    double t_write = now_s() - t0;
    rp_params_free(&l);

    rp_st_file *wf = NULL;
    rp_flux *m = NULL;
    t0 = now_s();
    rp_status st = rp_st_open(wpath, &wf, &err);
    if (st == RP_OK) st = rp_flux_load(&cfg, wf, &m, &err);
    if (wf) rp_st_close(wf); /* the model holds its own copy */
    double t_load = now_s() - t0;
    if (st != RP_OK) return fail(&err, 1);

    /* ---- inputs ---- */
    const int Cin = cfg.in_channels, Dctx = cfg.joint_attention_dim, Dp = cfg.pooled_dim;
    const size_t n_x = (size_t)B * Cin * H * W;
    float *x = malloc(n_x * sizeof *x);                                   /* (B, Cin, H, W) */
    float *out = malloc(n_x * sizeof *out);                               /* (B, Cin, H, W) */
    float *t = malloc((size_t)B * sizeof *t);                             /* (B) */
    float *g = malloc((size_t)B * sizeof *g);                             /* (B) */
    float *context = malloc(((size_t)B * L * Dctx + 1) * sizeof *context); /* (B, L, Dctx) */
    float *pooled = malloc((size_t)B * Dp * sizeof *pooled);              /* (B, Dpool) */
    uint8_t *mask = malloc((size_t)B * L + 1);                            /* (B, L) */
    rp_trace tr;
    rp_trace_init(&tr);
    int rc = 1;
    if (!x || !out || !t || !g || !context || !pooled || !mask) {
        fprintf(stderr, "flux_forward: out of memory for the inputs\n");
        goto cleanup;
    }
    rp_randn(x, n_x, (uint64_t)seed, 0, 0);
    rp_randn(t, (size_t)B, (uint64_t)seed, 1, 0);
    rp_randn(g, (size_t)B, (uint64_t)seed, 2, 0);
    rp_randn(context, (size_t)B * L * Dctx, (uint64_t)seed, 3, 0);
    rp_randn(pooled, (size_t)B * Dp, (uint64_t)seed, 4, 0);
    for (int b = 0; b < B; b++) {
        t[b] = sigmoid(t[b]);
        g[b] = 1.0f + 4.0f * sigmoid(g[b]);
        int keep = L - 5 * b < 1 ? 1 : L - 5 * b;
        for (int j = 0; j < L; j++) mask[(size_t)b * L + j] = (uint8_t)(j < keep);
    }

    /* ---- forward ---- */
    rp_ctx ctx = rp_ctx_default();
    ctx.threads = (int)threads;
    if (trace_path) {
        ctx.trace = &tr;
        rp_trace_note(&tr, "model", model_name);
    }
    rp_ctx_apply(&ctx);
    t0 = now_s();
    st = rp_flux_forward(m, &ctx, out, x, t, cfg.guidance_embeds ? g : NULL, context, use_mask ? mask : NULL,
                         pooled, B, H, W, L, &err);
    double dt = now_s() - t0;
    if (st != RP_OK) { fail(&err, 1); goto cleanup; }
    rp_trace_next_eval(ctx.trace);

    /* ---- outputs ---- */
    char s_nd[16], s_ns[16], s_h[16], s_w[16], s_l[16], s_ws[32], s_seed[32];
    snprintf(s_nd, sizeof s_nd, "%d", cfg.n_double);
    snprintf(s_ns, sizeof s_ns, "%d", cfg.n_single);
    snprintf(s_h, sizeof s_h, "%d", H);
    snprintf(s_w, sizeof s_w, "%d", W);
    snprintf(s_l, sizeof s_l, "%d", L);
    snprintf(s_ws, sizeof s_ws, "%lld", wseed);
    snprintf(s_seed, sizeof s_seed, "%lld", seed);
    rp_st_writer *w = rp_st_writer_new();
    const int64_t sh_x[4] = {B, Cin, H, W}, sh_b[1] = {B}, sh_c[3] = {B, L, Dctx}, sh_p[2] = {B, Dp},
                  sh_m[2] = {B, L};
    st = w ? RP_OK : RP_FAIL(&err, RP_ERR_NOMEM, "cannot allocate the output writer");
    if (st == RP_OK) st = rp_st_writer_add(w, "x", RP_DT_F32, 4, sh_x, x, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "t", RP_DT_F32, 1, sh_b, t, &err);
    if (st == RP_OK && cfg.guidance_embeds) st = rp_st_writer_add(w, "guidance", RP_DT_F32, 1, sh_b, g, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "context", RP_DT_F32, 3, sh_c, context, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "pooled", RP_DT_F32, 2, sh_p, pooled, &err);
    if (st == RP_OK && use_mask) st = rp_st_writer_add(w, "mask", RP_DT_U8, 2, sh_m, mask, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "out", RP_DT_F32, 4, sh_x, out, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "preset", cfg.preset, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "n_double", s_nd, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "n_single", s_ns, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "height", s_h, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "width", s_w, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "text_len", s_l, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "weights", wpath, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "weight_seed", s_ws, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "seed", s_seed, &err);
    if (st == RP_OK) st = rp_st_writer_write(w, out_path, &err);
    rp_st_writer_free(w);
    if (st == RP_OK && trace_path) st = rp_trace_save(&tr, trace_path, &err);
    if (st != RP_OK) { fail(&err, 1); goto cleanup; }

    double maxabs = 0;
    for (size_t i = 0; i < n_x; i++) maxabs = fmax(maxabs, fabs(out[i]));
    const double gmac = rp_flux_macs(&cfg, H, W, L) * B / 1e9;
    printf("flux_forward %s (%d double + %d single, %.1fM params) batch %d latent %dx%d text %d%s: "
           "max|out| %.4g; weights written %.1f s, loaded %.1f s; forward %.3f s, %.2f GMAC (%.1f GMAC/s), "
           "activations %.1f MiB -> %s\n",
           cfg.preset, cfg.n_double, cfg.n_single, n_params / 1e6, B, H, W, L, use_mask ? " masked" : "", maxabs,
           t_write, t_load, dt, gmac, dt > 0 ? gmac / dt : 0.0,
           rp_flux_activation_bytes(&cfg, B, H, W, L, use_mask) / 1048576.0, out_path);
    rc = 0;

cleanup:
    rp_trace_free(&tr);
    free(x);
    free(out);
    free(t);
    free(g);
    free(context);
    free(pooled);
    free(mask);
    rp_flux_free(m);
    return rc;
}
