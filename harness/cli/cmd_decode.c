/* cmd_decode.c — `repro decode`: VAE-decode a latents file to PNG.
 *
 * Input: a safetensors file holding model-space latents (B, C, h, w) (a 3-D
 * (C, h, w) tensor is taken as B = 1) in any float dtype the reader converts.
 * Output: --out img.png for B = 1; for B > 1 one file per item, the index
 * inserted before the extension: img.png -> img-0.png, img-1.png, ...
 * (no extension: img -> img-0, img-1). --dump-float also writes the float
 * decoder output as F32 tensor "image" (B, 3, H, W), for parity tests. */
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
#include "engine/image.h"
#include "engine/safetensors.h"
#include "engine/st_compose.h"
#include "engine/strutil.h"
#include "engine/vae/vae.h"
#include "engine/pipeline/weights_cache.h"
#include "harness/cli/args.h"
#include "harness/cli/common.h"
#include "harness/cli/commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro decode --vae PRESET --latents IN.safetensors --out IMG.png [options]\n"
            "\n"
            "Decodes latents (B, C, h, w) with the VAE and writes 8-bit RGB PNGs.\n"
            "  --vae PRESET        vae-tiny | sd-vae\n"
            "  --vae-weights FILE  VAE weights (safetensors, diffusers AutoencoderKL or original LDM names)\n"
            "  --weight-seed S     synthetic weights from the cache for seed S (default 0;\n"
            "                      not with --vae-weights)\n"
            "  --latents FILE      input safetensors\n"
            "  --tensor NAME       tensor to decode (default latents)\n"
            "  --out IMG.png       output; for B > 1 one file per item: IMG-0.png, IMG-1.png, ...\n"
            "  --dump-float FILE   also write the float output as tensor \"image\" (B, 3, H, W)\n"
            "  --threads N         GEMM threads (default: OpenBLAS's)\n"
            "  --precision P       fp32 | bf16 (default fp32)\n"
            "  --attention A       math | split | subquad | flash | auto (default math)\n");
}

/* Strict unsigned 64-bit decimal parse; 0 on any junk, sign or overflow. */
static int usage_error(rp_error *err) {
    rp_report_error(err);
    return 2;
}

/* out = path with "-<i>" before the extension of its last component. */
static rp_status item_path(char *out, size_t cap, const char *path, int i, rp_error *err) {
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    size_t stem = dot && dot != (slash ? slash + 1 : path) ? (size_t)(dot - path) : strlen(path);
    int n = snprintf(out, cap, "%.*s-%d%s", (int)stem, path, i, path + stem);
    if (n < 0 || (size_t)n >= cap) return RP_FAIL(err, RP_ERR_INVALID, "output path too long: %s", path);
    return RP_OK;
}

/* Reads the latents tensor `name` from path into *z (B, C, h, w), malloc'd. */
static rp_status read_latents(const char *path, const char *name, int Cl, float **z, int *B, int *h, int *w,
                              rp_error *err) {
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    rp_status st = RP_OK;
    const rp_st_tensor *t = rp_st_find(f, name);
    int64_t sh[4];
    if (!t) {
        st = RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: no tensor '%s' (use --tensor to pick another)", path, name);
    } else if (t->ndim == 4 || t->ndim == 3) {
        sh[0] = t->ndim == 4 ? t->shape[0] : 1;
        memcpy(sh + 1, t->shape + (t->ndim - 3), 3 * sizeof *sh);
        if (sh[0] < 1 || sh[0] > 4096 || sh[1] != Cl || sh[2] < 1 || sh[2] > 1024 || sh[3] < 1 || sh[3] > 1024)
            st = RP_FAIL(err, RP_ERR_SHAPE,
                         "%s: tensor '%s' has shape (%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
                         "); the VAE needs (B <= 4096, %d, h <= 1024, w <= 1024)",
                         path, name, sh[0], sh[1], sh[2], sh[3], Cl);
    } else {
        st = RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' is %d-D; latents are (B, C, h, w) or (C, h, w)", path,
                     name, t->ndim);
    }
    if (st == RP_OK) {
        *z = malloc((size_t)sh[0] * sh[1] * sh[2] * sh[3] * sizeof(float)); /* (B, Cl, h, w) */
        if (!*z) st = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory for tensor '%s'", path, name);
        else st = rp_st_read_f32(f, name, t->ndim, t->shape, *z, err);
        if (st != RP_OK) { free(*z); *z = NULL; }
    }
    if (st == RP_OK) {
        *B = (int)sh[0];
        *h = (int)sh[2];
        *w = (int)sh[3];
    }
    rp_st_close(f);
    return st;
}

int rp_cmd_decode(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) { usage(stdout); return 0; }
    const char *vae = rp_arg_str(&a, "vae", NULL);
    const char *weights = rp_arg_str(&a, "vae-weights", NULL);
    const char *wseed_s = rp_arg_str(&a, "weight-seed", NULL);
    const char *lat_path = rp_arg_str(&a, "latents", NULL);
    const char *tensor = rp_arg_str(&a, "tensor", "latents");
    const char *out_path = rp_arg_str(&a, "out", NULL);
    const char *dump_path = rp_arg_str(&a, "dump-float", NULL);
    long long threads = rp_arg_int(&a, "threads", 0);
    const char *prec_s = rp_arg_str(&a, "precision", "fp32");
    const char *attn_s = rp_arg_str(&a, "attention", "math");
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) return usage_error(&err);

    if (!vae || !lat_path || !out_path) {
        RP_FAIL(&err, RP_ERR_INVALID, "decode: --vae, --latents and --out are required (see repro decode --help)");
        return usage_error(&err);
    }
    uint64_t wseed;
    if (rp_cli_weight_seed("decode", wseed_s, weights, "--vae-weights", &wseed, &err) != RP_OK)
        return usage_error(&err);
    rp_ctx ctx;
    if (rp_cli_cpu_ctx(threads, prec_s, attn_s, &ctx, &err) != RP_OK) return usage_error(&err);
    rp_vae_config cfg;
    if (rp_vae_preset(vae, &cfg, &err) != RP_OK) return usage_error(&err);

    /* ---- weights ---- */
    char wpath[4096];
    rp_st_file *wf = NULL;
    rp_vae *m = NULL;
    rp_status st = rp_weights_resolve(vae, 0, wseed, weights, wpath, sizeof wpath, &err);
    if (st == RP_OK) st = rp_weights_open(wpath, &wf, &err);
    if (st == RP_OK) {
        /* synthetic files say which model they are for; catch a swapped file early */
        const char *mm = rp_st_meta(wf, "repro.model");
        if (mm && strcmp(mm, vae))
            st = RP_FAIL(&err, RP_ERR_INVALID, "%s: weights are for model '%s', not '%s'", wpath, mm, vae);
    }
    if (st == RP_OK) st = rp_vae_load(&cfg, wf, &m, &err);
    if (wf) rp_st_close(wf); /* the model holds its own copy */
    if (st != RP_OK) return rp_report_error(&err);

    /* ---- latents -> image ---- */
    float *z = NULL, *img = NULL;
    uint8_t *rgb = NULL;
    int B = 0, h = 0, w = 0, rc = 1;
    st = read_latents(lat_path, tensor, cfg.latent_channels, &z, &B, &h, &w, &err);
    if (st != RP_OK) { rp_report_error(&err); goto cleanup; }
    const int f = rp_vae_scale_factor(&cfg), H = h * f, W = w * f;
    img = malloc((size_t)B * 3 * H * W * sizeof *img); /* (B, 3, H, W) */
    rgb = malloc((size_t)B * H * W * 3);               /* (B, H, W, 3) */
    if (!img || !rgb) {
        RP_FAIL(&err, RP_ERR_NOMEM, "decode: out of memory for %d images of %dx%d", B, W, H);
        rp_report_error(&err);
        goto cleanup;
    }
    rp_ctx_apply(&ctx);
    double t0 = rp_now_s();
    st = rp_vae_decode(m, &ctx, img, z, B, h, w, &err);
    double dt = rp_now_s() - t0;
    if (st != RP_OK) { rp_report_error(&err); goto cleanup; }
    rp_image_to_rgb8(rgb, img, B, H, W);

    /* ---- outputs ---- */
    for (int i = 0; i < B && st == RP_OK; i++) {
        char p[4096];
        st = B == 1 ? (snprintf(p, sizeof p, "%s", out_path) < (int)sizeof p
                           ? RP_OK
                           : RP_FAIL(&err, RP_ERR_INVALID, "output path too long: %s", out_path))
                    : item_path(p, sizeof p, out_path, i, &err);
        if (st == RP_OK) st = rp_png_write(p, rgb + (size_t)i * H * W * 3, W, H, &err);
    }
    if (st == RP_OK && dump_path) {
        rp_st_writer *wr = rp_st_writer_new();
        const int64_t sh[4] = {B, 3, H, W};
        st = wr ? RP_OK : RP_FAIL(&err, RP_ERR_NOMEM, "decode: cannot allocate the output writer");
        if (st == RP_OK) st = rp_st_writer_add(wr, "image", RP_DT_F32, 4, sh, img, &err);
        if (st == RP_OK) st = rp_st_writer_meta(wr, "vae", vae, &err);
        if (st == RP_OK) st = rp_st_writer_meta(wr, "weights", wpath, &err);
        if (st == RP_OK) st = rp_st_writer_meta(wr, "latents", lat_path, &err);
        if (st == RP_OK) st = rp_st_writer_meta(wr, "precision", rp_precision_name(ctx.precision), &err);
        if (st == RP_OK) st = rp_st_writer_meta(wr, "attention", rp_attn_kind_name(ctx.attn.kind), &err);
        if (st == RP_OK) st = rp_st_writer_write(wr, dump_path, &err);
        rp_st_writer_free(wr);
    }
    if (st != RP_OK) { rp_report_error(&err); goto cleanup; }

    double maxabs = 0;
    for (size_t i = 0; i < (size_t)B * 3 * H * W; i++) maxabs = fmax(maxabs, fabs(img[i]));
    printf("decode %s: latents (%d, %d, %d, %d) -> images (%d, 3, %d, %d), max|x| %.4g, %.3f s -> %s%s\n", vae,
           B, cfg.latent_channels, h, w, B, H, W, maxabs, dt, out_path, B > 1 ? " (one file per item)" : "");
    rc = 0;

cleanup:
    free(z);
    free(img);
    free(rgb);
    rp_vae_free(m);
    return rc;
}
