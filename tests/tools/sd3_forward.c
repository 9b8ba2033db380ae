/* sd3_forward.c — one SD3 forward on synthetic weights and seeded inputs, dumped for the
 * parity test (tests/reference/test_sd3_parity.py against sd3_ref.py).
 *
 * Writes the synthetic weights of the preset (with an optional depth override) to
 * --weights with rp_params_write_synthetic, loads them back from that file (the same
 * path a real checkpoint takes), runs rp_sd3_forward and writes inputs and output to --out.
 * With --load the file is a trained checkpoint (engine/models/digits/sd3-digits.safetensors),
 * read as given.
 * Inputs are a pure function of (seed, batch index), drawn with rp_randn:
 *   x[i]       (Cin, H, W)   rp_randn(seed, index i, stream 0)
 *   context[i] (L, Djoint)   rp_randn(seed, index i, stream 1)
 *   pooled[i]  (Dpool)       rp_randn(seed, index i, stream 2)
 *   t[i]       1000 * (1 - frac(0.137 seed + 0.3317 i)), in (0, 1000]; t[0] = 1000 at seed 0
 *   context_mask[i] (L)      with --mask: 0 on the last floor(i * L / (B + 1)) tokens, else 1
 * (streams 1 and 2 only name distinct draws here; the sampler's noise uses its own seeds). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/ctx.h"
#include "engine/error.h"
#include "engine/models/sd3.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/trace.h"
#include "harness/cli/args.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: sd3_forward --preset NAME --weights W.safetensors --out FWD.safetensors [options]\n"
            "  --preset NAME       sd3-tiny | sd3-medium | sd3.5-medium-tiny | ... (an SD3 preset)\n"
            "  --depth N           override the preset's depth (the last block stays context_pre_only)\n"
            "  --batch B           batch size (default 1)\n"
            "  --ctx-len L         text tokens (default: the preset's context_len)\n"
            "  --height H --width W  latent size (default: sample_size)\n"
            "  --seed S            input seed (default 0)\n"
            "  --weight-seed S     synthetic weight seed (default 0)\n"
            "  --mask              pass a text key mask (later batch items mask more tokens)\n"
            "  --load              read --weights as given (a trained checkpoint) instead of\n"
            "                      writing synthetic weights there first\n"
            "  --threads N         GEMM threads (default: OpenBLAS's)\n"
            "  --precision P       fp32 | bf16 (default fp32)\n"
            "  --trace FILE        also write per-layer activation statistics\n");
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int fail(const rp_error *err) {
    fprintf(stderr, "sd3_forward: %s (%s)\n", err->msg, err->where);
    return 1;
}

int main(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) { usage(stdout); return 0; }
    const char *preset = rp_arg_str(&a, "preset", NULL);
    const char *wpath = rp_arg_str(&a, "weights", NULL);
    const char *out_path = rp_arg_str(&a, "out", NULL);
    const char *trace_path = rp_arg_str(&a, "trace", NULL);
    const char *prec_s = rp_arg_str(&a, "precision", "fp32");
    long long depth = rp_arg_int(&a, "depth", 0);
    long long batch = rp_arg_int(&a, "batch", 1);
    long long ctx_len = rp_arg_int(&a, "ctx-len", 0);
    long long height = rp_arg_int(&a, "height", 0);
    long long width = rp_arg_int(&a, "width", 0);
    long long seed_ll = rp_arg_int(&a, "seed", 0);
    long long wseed_ll = rp_arg_int(&a, "weight-seed", 0);
    long long threads = rp_arg_int(&a, "threads", 0);
    int use_mask = rp_arg_flag(&a, "mask");
    int load_only = rp_arg_flag(&a, "load");
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) { usage(stderr); return fail(&err) + 1; }
    if (!preset || !wpath || !out_path) {
        usage(stderr);
        return 2;
    }
    if (depth < 0 || depth > 1000 || batch < 1 || batch > 4096 || ctx_len < 0 || ctx_len > 100000 ||
        height < 0 || height > 100000 || width < 0 || width > 100000 || seed_ll < 0 || wseed_ll < 0 ||
        threads < 0 || threads > 1024) {
        fprintf(stderr, "sd3_forward: an option is out of range\n");
        return 2;
    }

    rp_sd3_config cfg;
    if (rp_sd3_preset(preset, &cfg, &err) != RP_OK) return fail(&err);
    if (depth > 0) cfg.depth = (int)depth;
    const int B = (int)batch, L = ctx_len > 0 ? (int)ctx_len : cfg.context_len;
    const int H = height > 0 ? (int)height : cfg.sample_size, W = width > 0 ? (int)width : cfg.sample_size;
    const uint64_t seed = (uint64_t)seed_ll, wseed = (uint64_t)wseed_ll;

    rp_ctx ctx = rp_ctx_default();
    ctx.threads = (int)threads;
    if (!strcmp(prec_s, "fp32")) ctx.precision = RP_PREC_FP32;
    else if (!strcmp(prec_s, "bf16")) ctx.precision = RP_PREC_BF16;
    else { fprintf(stderr, "sd3_forward: --precision '%s' is not fp32 or bf16\n", prec_s); return 2; }

    /* ---- weights: write synthetic (unless --load), read back by name ---- */
    double t0 = now_s();
    rp_param_list l = {0};
    rp_sd3_param_specs(&cfg, &l);
    const size_t n_params = rp_params_total(&l);
    rp_status st = load_only ? RP_OK : rp_params_write_synthetic(&l, preset, wseed, wpath, &err);
    rp_params_free(&l);
    if (st != RP_OK) return fail(&err);
    double t_write = now_s() - t0;
    t0 = now_s();
    rp_st_file *wf = NULL;
    rp_sd3 *m = NULL;
    st = rp_st_open(wpath, &wf, &err);
    if (st == RP_OK) st = rp_sd3_load(&cfg, wf, &m, &err);
    if (wf) rp_st_close(wf); /* the model holds its own copy */
    if (st != RP_OK) return fail(&err);
    double t_load = now_s() - t0;

    /* ---- inputs ---- */
    const int Cin = cfg.in_channels, Cout = cfg.out_channels;
    const int Dj = cfg.joint_attention_dim, Dp = cfg.pooled_projection_dim;
    const size_t n_x = (size_t)Cin * H * W, n_o = (size_t)Cout * H * W, n_c = (size_t)L * Dj;
    float *x = malloc((size_t)B * n_x * sizeof *x);          /* (B, Cin, H, W) */
    float *out = malloc((size_t)B * n_o * sizeof *out);      /* (B, Cout, H, W) */
    float *context = malloc((size_t)B * n_c * sizeof *context); /* (B, L, Djoint) */
    float *pooled = malloc((size_t)B * Dp * sizeof *pooled); /* (B, Dpool) */
    float *t = malloc((size_t)B * sizeof *t);                /* (B) */
    uint8_t *mask = malloc((size_t)B * L);                   /* (B, L) */
    rp_trace tr;
    rp_trace_init(&tr);
    int rc = 1;
    if (!x || !out || !context || !pooled || !t || !mask) {
        fprintf(stderr, "sd3_forward: cannot allocate inputs for batch %d\n", B);
        goto cleanup;
    }
    for (int i = 0; i < B; i++) {
        rp_randn(x + (size_t)i * n_x, n_x, seed, (uint64_t)i, 0);
        rp_randn(context + (size_t)i * n_c, n_c, seed, (uint64_t)i, 1);
        rp_randn(pooled + (size_t)i * Dp, (size_t)Dp, seed, (uint64_t)i, 2);
        double u = fmod(0.137 * (double)seed + 0.3317 * i, 1.0);
        t[i] = (float)(1000.0 * (1.0 - u));
        int n_masked = use_mask ? (int)((int64_t)i * L / (B + 1)) : 0;
        for (int j = 0; j < L; j++) mask[(size_t)i * L + j] = j < L - n_masked;
    }

    /* ---- forward ---- */
    if (trace_path) {
        ctx.trace = &tr;
        rp_trace_note(&tr, "model", preset);
        rp_trace_note(&tr, "precision", rp_precision_name(ctx.precision));
        rp_trace_note(&tr, "attention", rp_attn_kind_name(ctx.attn.kind));
    }
    rp_ctx_apply(&ctx);
    t0 = now_s();
    st = rp_sd3_forward(m, &ctx, out, x, t, context, use_mask ? mask : NULL, pooled, B, L, H, W, &err);
    double dt = now_s() - t0;
    if (st != RP_OK) { fail(&err); goto cleanup; }
    rp_trace_next_eval(ctx.trace);
    const double macs = rp_sd3_macs(&cfg, L, H, W) * B;
    printf("sd3_forward: %s depth %d, batch %d, latent %dx%d, %d text tokens, %s%s: %.1f M params "
           "(write %.2fs, load %.2fs), forward %.3fs, %.3f GMAC, %.1f GFLOP/s\n",
           preset, cfg.depth, B, H, W, L, prec_s, use_mask ? ", text mask" : "", n_params / 1e6, t_write,
           t_load, dt, macs / 1e9, 2.0 * macs / dt / 1e9);

    /* ---- outputs ---- */
    char buf[64];
    rp_st_writer *w = rp_st_writer_new();
    const int64_t sh_x[4] = {B, Cin, H, W}, sh_o[4] = {B, Cout, H, W}, sh_c[3] = {B, L, Dj};
    const int64_t sh_p[2] = {B, Dp}, sh_b[1] = {B}, sh_m[2] = {B, L};
    st = w ? RP_OK : RP_FAIL(&err, RP_ERR_NOMEM, "cannot allocate the output writer");
    if (st == RP_OK) st = rp_st_writer_add(w, "x", RP_DT_F32, 4, sh_x, x, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "t", RP_DT_F32, 1, sh_b, t, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "context", RP_DT_F32, 3, sh_c, context, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "pooled", RP_DT_F32, 2, sh_p, pooled, &err);
    if (st == RP_OK && use_mask) st = rp_st_writer_add(w, "context_mask", RP_DT_U8, 2, sh_m, mask, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "out", RP_DT_F32, 4, sh_o, out, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "model", preset, &err);
    snprintf(buf, sizeof buf, "%d", cfg.depth);
    if (st == RP_OK) st = rp_st_writer_meta(w, "depth", buf, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "weights", wpath, &err);
    snprintf(buf, sizeof buf, "%" PRIu64, wseed);
    if (st == RP_OK) st = rp_st_writer_meta(w, "weight_seed", buf, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "precision", prec_s, &err);
    snprintf(buf, sizeof buf, "%.6f", dt);
    if (st == RP_OK) st = rp_st_writer_meta(w, "forward_s", buf, &err);
    snprintf(buf, sizeof buf, "%.17g", macs);
    if (st == RP_OK) st = rp_st_writer_meta(w, "macs", buf, &err);
    if (st == RP_OK) st = rp_st_writer_write(w, out_path, &err);
    rp_st_writer_free(w);
    if (st == RP_OK && trace_path) st = rp_trace_save(&tr, trace_path, &err);
    if (st != RP_OK) { fail(&err); goto cleanup; }
    rc = 0;

cleanup:
    rp_trace_free(&tr);
    free(x);
    free(out);
    free(context);
    free(pooled);
    free(t);
    free(mask);
    rp_sd3_free(m);
    return rc;
}
