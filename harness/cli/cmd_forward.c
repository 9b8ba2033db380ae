/* cmd_forward.c — `repro forward`: one DiT forward on seeded inputs, dumped for parity tests.
 *
 * Inputs are a pure function of (seed, batch index), so an independent
 * implementation (tests/reference/dit_ref.py) can be fed the same x, t, y from
 * the output file and compared element by element:
 *   x[i] = rp_randn(seed, index i, stream 0)          (Cin, S, S)
 *   t[i] = (seed * 37 + i * 331) mod 1000             spread over the schedule
 *   y[i] = (seed + 7 * i) mod num_classes; the last item is the null class when B >= 2,
 *          so the CFG path's table row is exercised too. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/attention/attention.h"
#include "engine/clock.h"
#include "engine/ctx.h"
#include "engine/error.h"
#include "engine/models/dit.h"
#include "engine/models/registry.h"
#include "engine/params.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/st_compose.h"
#include "engine/strutil.h"
#include "engine/trace.h"
#include "engine/pipeline/weights_cache.h"
#include "harness/cli/args.h"
#include "harness/cli/common.h"
#include "harness/cli/commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro forward --model PRESET --out FWD.safetensors [options]\n"
            "\n"
            "Runs one DiT forward on deterministic inputs and writes x, t, y, out (safetensors).\n"
            "  --model PRESET      dit-tiny | dit-digits | dit-xl-2-128 | dit-xl-2-256 | dit-xl-2-512\n"
            "  --depth N           override the preset's depth (default: the preset's)\n"
            "  --weights FILE      weights (safetensors, upstream state_dict names)\n"
            "  --weight-seed S     synthetic weights from the cache for seed S (default 0;\n"
            "                      not with --weights)\n"
            "  --seed S            input seed (default 0)\n"
            "  --batch B           batch size (default 1)\n"
            "  --threads N         GEMM threads (default: OpenBLAS's)\n"
            "  --precision P       fp32 | bf16 (default fp32)\n"
            "  --attention A       math | split | subquad | flash | auto (default math)\n"
            "  --attention-q-chunk N   query rows per slice/chunk/tile (split, subquad, flash, auto;\n"
            "                      default: the variant's, or auto's pick)\n"
            "  --attention-kv-chunk N  keys per chunk/tile (subquad, flash, auto)\n"
            "  --device-profile P  what auto decides from: cpu-avx512-24g | cpu-avx2-8g |\n"
            "                      cpu-lowmem-2g | cpu-sse2-4g | host (default), or key=val,...\n"
            "                      (mem=SIZE, simd=sse2|avx2|avx512, sdpa=0|1, split=0|1, flash_hd=N)\n"
            "  --reduce-split      split every GEMM's K reduction in two halves\n"
            "  --openblas-coretype C  OpenBLAS kernel set (Haswell, SkylakeX, ...); re-executes\n"
            "                      with OPENBLAS_CORETYPE=C when the loaded one differs\n"
            "  --trace FILE        also write per-layer activation statistics\n"
            "  --out FILE          output path (written atomically)\n");
}

/* Strict unsigned 64-bit decimal parse; 0 on any junk, sign or overflow. */
static int usage_error(rp_error *err) {
    rp_report_error(err);
    return 2;
}

int rp_cmd_forward(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) { usage(stdout); return 0; }
    const char *model = rp_arg_str(&a, "model", NULL);
    long long depth = rp_arg_int(&a, "depth", 0);
    const char *weights = rp_arg_str(&a, "weights", NULL);
    const char *wseed_s = rp_arg_str(&a, "weight-seed", NULL);
    const char *seed_s = rp_arg_str(&a, "seed", "0");
    long long batch = rp_arg_int(&a, "batch", 1);
    long long threads = rp_arg_int(&a, "threads", 0);
    const char *prec_s = rp_arg_str(&a, "precision", "fp32");
    const char *attn_s = rp_arg_str(&a, "attention", "math");
    const char *aq_s = rp_arg_str(&a, "attention-q-chunk", NULL);
    const char *akv_s = rp_arg_str(&a, "attention-kv-chunk", NULL);
    const char *core_s = rp_arg_str(&a, "openblas-coretype", NULL);
    const char *prof_s = rp_arg_str(&a, "device-profile", NULL);
    const int reduce_split = rp_arg_flag(&a, "reduce-split");
    const char *trace_path = rp_arg_str(&a, "trace", NULL);
    const char *out_path = rp_arg_str(&a, "out", NULL);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) return usage_error(&err);

    if (!model || !out_path) {
        RP_FAIL(&err, RP_ERR_INVALID, "forward: --model and --out are required (see repro forward --help)");
        return usage_error(&err);
    }
    uint64_t seed = 0, wseed;
    if (!rp_parse_u64(seed_s, &seed)) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --seed: '%s' is not an unsigned 64-bit integer", seed_s);
        return usage_error(&err);
    }
    if (rp_cli_weight_seed("forward", wseed_s, weights, "--weights", &wseed, &err) != RP_OK)
        return usage_error(&err);
    if (depth < 0 || depth > 1000) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --depth: %lld is out of range (1..1000, 0 = preset)", depth);
        return usage_error(&err);
    }
    if (batch < 1 || batch > 4096) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --batch: %lld is out of range (1..4096)", batch);
        return usage_error(&err);
    }
    rp_ctx ctx;
    if (rp_cli_cpu_ctx(threads, prec_s, attn_s, &ctx, &err) != RP_OK) return usage_error(&err);
    ctx.reduce_split = reduce_split;
    if (rp_ctx_configure(&ctx, aq_s, akv_s, core_s, prof_s, &err) != RP_OK) return usage_error(&err);
    /* before any work: a different OpenBLAS core means re-executing this command */
    if (rp_ctx_ensure_coretype(ctx.blas_core, NULL, &err) != RP_OK) return rp_report_error(&err);

    rp_family fam;
    if (rp_model_family(model, &fam, &err) != RP_OK) return usage_error(&err);
    if (fam != RP_FAMILY_DIT) {
        RP_FAIL(&err, RP_ERR_INVALID, "forward: '%s' is not a DiT preset (use repro decode for VAEs)", model);
        return usage_error(&err);
    }
    rp_dit_config cfg;
    if (rp_dit_preset(model, &cfg, &err) != RP_OK) return rp_report_error(&err);
    if (depth > 0) cfg.depth = (int)depth;

    /* ---- weights ---- */
    char wpath[4096];
    rp_st_file *wf = NULL;
    rp_dit *m = NULL;
    rp_status st = rp_weights_resolve(model, (int)depth, wseed, weights, wpath, sizeof wpath, &err);
    if (st == RP_OK) st = rp_weights_open(wpath, &wf, &err);
    if (st == RP_OK) st = rp_dit_load(&cfg, wf, &m, &err);
    if (wf) rp_st_close(wf); /* the model holds its own copy */
    if (st != RP_OK) return rp_report_error(&err);

    /* ---- inputs ---- */
    const int B = (int)batch, S = cfg.input_size, Cin = cfg.in_channels;
    const int Cout = cfg.learn_sigma ? 2 * Cin : Cin;
    const size_t n_in = (size_t)Cin * S * S, n_out = (size_t)Cout * S * S;
    float *x = malloc((size_t)B * n_in * sizeof *x);     /* (B, Cin, S, S) */
    float *out = malloc((size_t)B * n_out * sizeof *out); /* (B, Cout, S, S) */
    float *t = malloc((size_t)B * sizeof *t);            /* (B) */
    int *y = malloc((size_t)B * sizeof *y);               /* (B) */
    int64_t *y64 = malloc((size_t)B * sizeof *y64);       /* (B) as written */
    rp_trace tr;
    rp_trace_init(&tr);
    int rc = 1;
    if (!x || !out || !t || !y || !y64) {
        RP_FAIL(&err, RP_ERR_NOMEM, "forward: cannot allocate inputs for batch %d", B);
        rp_report_error(&err);
        goto cleanup;
    }
    for (int i = 0; i < B; i++) {
        rp_randn(x + (size_t)i * n_in, n_in, seed, (uint64_t)i, RP_STREAM_INIT_NOISE);
        /* unsigned arithmetic: wraps instead of overflowing for huge seeds */
        t[i] = (float)((seed * 37u + (uint64_t)i * 331u) % 1000u);
        y[i] = (int)((seed + 7u * (uint64_t)i) % (uint64_t)cfg.num_classes);
        if (B >= 2 && i == B - 1) y[i] = cfg.num_classes;
        y64[i] = y[i];
    }

    /* ---- forward ---- */
    if (trace_path) {
        ctx.trace = &tr;
        rp_trace_note(&tr, "model", model);
        rp_trace_note(&tr, "precision", rp_precision_name(ctx.precision));
        rp_trace_note(&tr, "attention", rp_attn_kind_name(ctx.attn.kind));
    }
    rp_ctx_apply(&ctx);
    if (trace_path) rp_ctx_trace_notes(&ctx, &tr); /* every reduction-order knob, as in effect */
    double t0 = rp_now_s();
    st = rp_dit_forward(m, &ctx, out, x, t, y, B, &err);
    double dt = rp_now_s() - t0;
    if (st != RP_OK) { rp_report_error(&err); goto cleanup; }
    rp_trace_next_eval(ctx.trace);

    /* ---- outputs ---- */
    char depth_s[32];
    snprintf(depth_s, sizeof depth_s, "%d", cfg.depth);
    rp_st_writer *w = rp_st_writer_new();
    const int64_t sh_in[4] = {B, Cin, S, S}, sh_out[4] = {B, Cout, S, S}, sh_b[1] = {B};
    st = w ? RP_OK : RP_FAIL(&err, RP_ERR_NOMEM, "forward: cannot allocate the output writer");
    if (st == RP_OK) st = rp_st_writer_add(w, "x", RP_DT_F32, 4, sh_in, x, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "t", RP_DT_F32, 1, sh_b, t, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "y", RP_DT_I64, 1, sh_b, y64, &err);
    if (st == RP_OK) st = rp_st_writer_add(w, "out", RP_DT_F32, 4, sh_out, out, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "model", model, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "depth", depth_s, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "precision", rp_precision_name(ctx.precision), &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "attention", rp_attn_kind_name(ctx.attn.kind), &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "reduce_split", ctx.reduce_split ? "1" : "0", &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "openblas.core", rp_blas_core_loaded(), &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "device_profile", ctx.device.name, &err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "weights", wpath, &err);
    if (st == RP_OK) st = rp_st_writer_write(w, out_path, &err);
    rp_st_writer_free(w);
    if (st == RP_OK && trace_path) st = rp_trace_save(&tr, trace_path, &err);
    if (st != RP_OK) { rp_report_error(&err); goto cleanup; }

    double maxabs = 0;
    for (size_t i = 0; i < (size_t)B * n_out; i++) maxabs = fmax(maxabs, fabs(out[i]));
    double gmac = rp_dit_macs(&cfg) * B / 1e9;
    printf("forward %s depth %d batch %d %s: max|out| %.4g, %.3f s, %.2f GMAC (%.1f GMAC/s) -> %s\n", model,
           cfg.depth, B, rp_precision_name(ctx.precision), maxabs, dt, gmac, dt > 0 ? gmac / dt : 0.0,
           out_path);
    rc = 0;

cleanup:
    rp_trace_free(&tr);
    free(x);
    free(out);
    free(t);
    free(y);
    free(y64);
    rp_dit_free(m);
    return rc;
}
