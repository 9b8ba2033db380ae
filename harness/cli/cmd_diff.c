/* cmd_diff.c — `repro diff A B`: every metric of harness/metrics/metrics.h for two PNGs,
 * two latents files or two result directories, one per line as "name value",
 * so the metrics are usable on their own (and by scripts).
 *
 * Values are printed with %.17g (round-trips a double exactly); +inf and NaN
 * print as "inf" and "nan". Exit status: 0 when everything compared (however
 * different), 1 on an error, 2 on a usage error. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/error.h"
#include "engine/image.h"
#include "engine/safetensors.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/metrics/metrics.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro diff A B [--heatmap OUT] [--ssim-map FILE]\n"
            "\n"
            "Compares two PNGs, two latents files (safetensors, as `repro generate --latents`\n"
            "writes them) or two result directories, printing one metric per line: NAME VALUE.\n"
            "  images (8-bit RGB): psnr (dB, data range 255, inf if identical), ssim\n"
            "      (scikit-image's Gaussian SSIM, sigma 1.5, mean over channels; nan below\n"
            "      11x11), max_abs (levels), changed (share of pixels with any channel\n"
            "      different), changed_gt8 (share differing by more than 8 levels)\n"
            "  latents (tensor \"latents\"): max_abs, mean_abs, rel_l2 (||A-B|| / ||A||),\n"
            "      cosine; and rel_l2_step.T for each step T of tensor \"trajectory\" when\n"
            "      both files have it\n"
            "  directories: each PNG and .safetensors file present in both (same relative\n"
            "      path), lines FILE.NAME VALUE; files in only one are listed on stderr\n"
            "  --heatmap OUT     images: write |A-B| (max over channels) as a colour ramp\n"
            "                    scaled to the largest difference (printed as heatmap_scale);\n"
            "                    directories: OUT is a directory, one heatmap per PNG\n"
            "  --ssim-map FILE   images: write the full SSIM map, tensor \"ssim\" (H, W, 3) F64\n");
}

/* "%s%s %.17g\n" with the file prefix ("" or "name.png."). */
static void put(const char *prefix, const char *name, double v) { printf("%s%s %.17g\n", prefix, name, v); }

/* 1 if path starts with the PNG signature. */
static int is_png(const char *path) {
    static const unsigned char SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char b[8];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const size_t n = fread(b, 1, 8, f);
    fclose(f);
    return n == 8 && !memcmp(b, SIG, 8);
}

/* Compares two PNGs and prints their metrics with prefix; optionally writes
 * the heatmap (heat) and the SSIM map (smap). */
static rp_status diff_images(const char *pa, const char *pb, const char *prefix, const char *heat,
                             const char *smap, rp_error *err) {
    uint8_t *a = NULL, *b = NULL, *hm = NULL; /* (H, W, 3) each */
    double *map = NULL;                       /* (H, W, 3) */
    int Wa, Ha, Wb, Hb;
    rp_status st = rp_png_read(pa, &a, &Wa, &Ha, err);
    if (st == RP_OK) st = rp_png_read(pb, &b, &Wb, &Hb, err);
    if (st == RP_OK && (Wa != Wb || Ha != Hb))
        st = RP_FAIL(err, RP_ERR_SHAPE, "diff: %s is %dx%d but %s is %dx%d; images must have the same size", pa,
                     Wa, Ha, pb, Wb, Hb);
    const size_t npx = st == RP_OK ? (size_t)Wa * Ha : 0;
    rp_image_metrics m;
    if (st == RP_OK) st = rp_image_metrics_compute(a, b, Wa, Ha, &m, err);
    if (st == RP_OK) {
        put(prefix, "psnr", m.psnr);
        put(prefix, "ssim", m.ssim);
        printf("%smax_abs %d\n", prefix, m.max_abs);
        put(prefix, "changed", m.changed);
        put(prefix, "changed_gt8", m.changed_gt8);
        if (m.ssim != m.ssim)
            fprintf(stderr, "repro diff: %s: ssim is undefined below %dx%d pixels (the Gaussian window)\n", pa,
                    RP_SSIM_MIN_SIDE, RP_SSIM_MIN_SIDE);
    }
    if (st == RP_OK && heat) {
        hm = malloc(3 * npx);
        if (!hm) st = RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory for a %dx%d heatmap", Wa, Ha);
        if (st == RP_OK) {
            const int scale = rp_diff_heatmap(a, b, Wa, Ha, hm);
            st = rp_png_write(heat, hm, Wa, Ha, err);
            if (st == RP_OK) printf("%sheatmap_scale %d\n", prefix, scale);
        }
    }
    if (st == RP_OK && smap) {
        double unused;
        map = malloc(sizeof(double) * 3 * npx);
        if (!map) st = RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory for a %dx%d SSIM map", Wa, Ha);
        if (st == RP_OK) st = rp_ssim_u8(a, b, Wa, Ha, 3, &unused, map, err);
        rp_st_writer *w = st == RP_OK ? rp_st_writer_new() : NULL;
        if (st == RP_OK && !w) st = RP_FAIL(err, RP_ERR_NOMEM, "diff: cannot allocate the SSIM map writer");
        const int64_t shape[3] = {Ha, Wa, 3};
        if (st == RP_OK) st = rp_st_writer_add(w, "ssim", RP_DT_F64, 3, shape, map, err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "a", pa, err);
        if (st == RP_OK) st = rp_st_writer_meta(w, "b", pb, err);
        if (st == RP_OK) st = rp_st_writer_write(w, smap, err);
        rp_st_writer_free(w);
    }
    free(a);
    free(b);
    free(hm);
    free(map);
    return st;
}

/* Reads tensor name of f (any float dtype) into *out, malloc'd, after checking
 * that g's tensor of that name has the same shape. Returns RP_ERR_NOT_FOUND
 * (with err set) when f lacks it. */
static rp_status read_pair(const rp_st_file *f, const rp_st_file *g, const char *name, float **fa, float **fb,
                           const rp_st_tensor **tf, rp_error *err) {
    const rp_st_tensor *t = rp_st_find(f, name), *u = rp_st_find(g, name);
    if (!t) return RP_FAIL(err, RP_ERR_NOT_FOUND, "diff: %s has no tensor '%s'", f->path, name);
    if (!u) return RP_FAIL(err, RP_ERR_NOT_FOUND, "diff: %s has no tensor '%s'", g->path, name);
    int same = t->ndim == u->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == u->shape[d];
    if (!same || t->numel == 0) {
        char sa[160] = "", sb[160] = "";
        for (int d = 0; d < t->ndim; d++)
            snprintf(sa + strlen(sa), sizeof sa - strlen(sa), "%s%" PRId64, d ? ", " : "", t->shape[d]);
        for (int d = 0; d < u->ndim; d++)
            snprintf(sb + strlen(sb), sizeof sb - strlen(sb), "%s%" PRId64, d ? ", " : "", u->shape[d]);
        return RP_FAIL(err, RP_ERR_SHAPE, "diff: tensor '%s' is (%s) in %s but (%s) in %s%s", name, sa, f->path,
                       sb, g->path, same ? " (empty)" : "");
    }
    *fa = malloc(sizeof(float) * t->numel);
    *fb = malloc(sizeof(float) * t->numel);
    if (!*fa || !*fb) return RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory for tensor '%s'", name);
    RP_TRY(rp_st_read_f32(f, name, t->ndim, t->shape, *fa, err));
    RP_TRY(rp_st_read_f32(g, name, u->ndim, u->shape, *fb, err));
    *tf = t;
    return RP_OK;
}

/* Compares two latents files and prints their metrics with prefix. With
 * lenient (directory mode), a file pair without a "latents" tensor is skipped
 * with a note and *skipped set, instead of failing. */
static rp_status diff_latents(const char *pa, const char *pb, const char *prefix, int lenient, int *skipped,
                              rp_error *err) {
    rp_st_file *f = NULL, *g = NULL;
    float *a = NULL, *b = NULL, *ta = NULL, *tb = NULL;
    double *steps = NULL;
    const rp_st_tensor *t = NULL;
    rp_status st = rp_st_open(pa, &f, err);
    if (st == RP_OK) st = rp_st_open(pb, &g, err);
    if (st == RP_OK && lenient && (!rp_st_find(f, "latents") || !rp_st_find(g, "latents"))) {
        fprintf(stderr, "repro diff: %s: not a latents file in both directories (no tensor 'latents'), skipped\n",
                pa);
        *skipped = 1;
        rp_st_close(f);
        rp_st_close(g);
        return RP_OK;
    }
    if (st == RP_OK) st = read_pair(f, g, "latents", &a, &b, &t, err);
    if (st == RP_OK) {
        rp_latent_metrics m;
        rp_latent_metrics_compute(a, b, t->numel, &m);
        put(prefix, "max_abs", m.max_abs);
        put(prefix, "mean_abs", m.mean_abs);
        put(prefix, "rel_l2", m.rel_l2);
        put(prefix, "cosine", m.cosine);
    }
    const int hf = st == RP_OK && rp_st_find(f, "trajectory"), hg = st == RP_OK && rp_st_find(g, "trajectory");
    if (st == RP_OK && hf != hg)
        fprintf(stderr, "repro diff: only %s has a trajectory; per-step metrics skipped\n", hf ? pa : pb);
    if (st == RP_OK && hf && hg) {
        st = read_pair(f, g, "trajectory", &ta, &tb, &t, err);
        const size_t n = st == RP_OK ? (size_t)t->shape[0] : 0; /* (steps + 1, B, C, H, W) */
        steps = n ? malloc(sizeof(double) * n) : NULL;
        if (st == RP_OK && !steps) st = RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory");
        if (st == RP_OK) {
            rp_trajectory_rel_l2(ta, tb, n, t->numel / n, steps);
            for (size_t s = 0; s < n; s++) printf("%srel_l2_step.%zu %.17g\n", prefix, s, steps[s]);
        }
    }
    rp_st_close(f);
    rp_st_close(g);
    free(a);
    free(b);
    free(ta);
    free(tb);
    free(steps);
    return st;
}

/* ---- directories ------------------------------------------------------------- */

typedef struct path_list {
    char **v;
    int n, cap;
} path_list;

static int has_suffix(const char *s, const char *suf) {
    const size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* Appends to l the paths, relative to root, of the .png and .safetensors
 * regular files under root/rel (rel "" for root itself), depth-first. */
static rp_status list_files(const char *root, const char *rel, int depth, path_list *l, rp_error *err) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    if (depth > 16) return RP_FAIL(err, RP_ERR_INVALID, "diff: %s: directories nested too deep", dir);
    DIR *d = opendir(dir);
    if (!d) return RP_FAIL(err, RP_ERR_IO, "diff: cannot open directory %s: %s", dir, strerror(errno));
    rp_status st = RP_OK;
    struct dirent *e;
    while (st == RP_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden and temporary files */
        char sub[4096], full[8192];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof sub) continue;
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat s;
        if (stat(full, &s) != 0) continue;
        if (S_ISDIR(s.st_mode)) {
            st = list_files(root, sub, depth + 1, l, err);
        } else if (S_ISREG(s.st_mode) && (has_suffix(sub, ".png") || has_suffix(sub, ".safetensors"))) {
            if (l->n == l->cap) {
                l->cap = l->cap ? 2 * l->cap : 64;
                char **v = realloc(l->v, sizeof *v * l->cap);
                if (!v) { st = RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory listing %s", dir); break; }
                l->v = v;
            }
            if (!(l->v[l->n] = strdup(sub))) st = RP_FAIL(err, RP_ERR_NOMEM, "diff: out of memory listing %s", dir);
            else l->n++;
        }
    }
    closedir(d);
    return st;
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static int in_list(const path_list *l, const char *s) {
    return bsearch(&s, l->v, l->n, sizeof *l->v, cmp_str) != NULL;
}

static void free_list(path_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

/* Compares every file present in both directories; returns the exit code. */
static int diff_dirs(const char *da, const char *db, const char *heatdir) {
    rp_error err;
    rp_error_clear(&err);
    path_list la = {0}, lb = {0};
    if (list_files(da, "", 0, &la, &err) != RP_OK || list_files(db, "", 0, &lb, &err) != RP_OK) {
        free_list(&la);
        free_list(&lb);
        return rp_report_error(&err);
    }
    qsort(la.v, la.n, sizeof *la.v, cmp_str);
    qsort(lb.v, lb.n, sizeof *lb.v, cmp_str);
    for (int i = 0; i < lb.n; i++)
        if (!in_list(&la, lb.v[i])) fprintf(stderr, "repro diff: only in %s: %s\n", db, lb.v[i]);
    if (heatdir && mkdir(heatdir, 0777) != 0 && errno != EEXIST) {
        RP_FAIL(&err, RP_ERR_IO, "diff: cannot create heatmap directory %s: %s", heatdir, strerror(errno));
        free_list(&la);
        free_list(&lb);
        return rp_report_error(&err);
    }
    int rc = 0, compared = 0;
    for (int i = 0; i < la.n; i++) {
        const char *rel = la.v[i];
        if (!in_list(&lb, rel)) {
            fprintf(stderr, "repro diff: only in %s: %s\n", da, rel);
            continue;
        }
        char pa[8192], pb[8192], prefix[4200], heat[8192];
        snprintf(pa, sizeof pa, "%s/%s", da, rel);
        snprintf(pb, sizeof pb, "%s/%s", db, rel);
        snprintf(prefix, sizeof prefix, "%s.", rel);
        rp_error_clear(&err);
        rp_status st;
        int skipped = 0;
        if (has_suffix(rel, ".png")) {
            if (heatdir) { /* sub/dir/img.png -> HEATDIR/sub_dir_img.png */
                snprintf(heat, sizeof heat, "%s/%s", heatdir, rel);
                for (char *c = heat + strlen(heatdir) + 1; *c; c++)
                    if (*c == '/') *c = '_';
            }
            st = diff_images(pa, pb, prefix, heatdir ? heat : NULL, NULL, &err);
        } else {
            st = diff_latents(pa, pb, prefix, 1, &skipped, &err);
        }
        if (st != RP_OK) rc = rp_report_error(&err);
        else compared += !skipped;
    }
    if (rc == 0 && compared == 0) {
        RP_FAIL(&err, RP_ERR_NOT_FOUND, "diff: %s and %s have no PNG or latents file in common", da, db);
        rc = rp_report_error(&err);
    }
    free_list(&la);
    free_list(&lb);
    return rc;
}

int rp_cmd_diff(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) { usage(stdout); return 0; }
    const char *heat = rp_arg_str(&a, "heatmap", NULL);
    const char *smap = rp_arg_str(&a, "ssim-map", NULL);
    /* the two positional operands: arguments no option claimed */
    const char *pos[2] = {NULL, NULL};
    int npos = rp_args_positional(&a, pos, 2);
    if (npos > 2) npos = 2; /* the rest stay unused: rp_args_finish names them */
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) { rp_report_error(&err); return 2; }
    if (npos != 2) {
        RP_FAIL(&err, RP_ERR_INVALID, "diff: needs two operands A B (see repro diff --help)");
        rp_report_error(&err);
        return 2;
    }
    struct stat sa, sb;
    for (int i = 0; i < 2; i++)
        if (stat(pos[i], i ? &sb : &sa) != 0) {
            RP_FAIL(&err, RP_ERR_IO, "diff: cannot read %s: %s", pos[i], strerror(errno));
            return rp_report_error(&err);
        }
    if (S_ISDIR(sa.st_mode) != S_ISDIR(sb.st_mode)) {
        RP_FAIL(&err, RP_ERR_INVALID, "diff: %s and %s must both be files or both be directories", pos[0], pos[1]);
        rp_report_error(&err);
        return 2;
    }
    if (S_ISDIR(sa.st_mode)) {
        if (smap) {
            RP_FAIL(&err, RP_ERR_INVALID, "diff: --ssim-map compares two images, not directories");
            rp_report_error(&err);
            return 2;
        }
        return diff_dirs(pos[0], pos[1], heat);
    }
    const int pa = is_png(pos[0]), pb = is_png(pos[1]);
    if (pa != pb) {
        RP_FAIL(&err, RP_ERR_INVALID, "diff: %s is %s but %s is not", pa ? pos[0] : pos[1], "a PNG",
                pa ? pos[1] : pos[0]);
        rp_report_error(&err);
        return 2;
    }
    if (!pa && (heat || smap)) {
        RP_FAIL(&err, RP_ERR_INVALID, "diff: --heatmap and --ssim-map apply to images, not latents files");
        rp_report_error(&err);
        return 2;
    }
    int skipped = 0;
    rp_status st = pa ? diff_images(pos[0], pos[1], "", heat, smap, &err)
                      : diff_latents(pos[0], pos[1], "", 0, &skipped, &err);
    return st == RP_OK ? 0 : rp_report_error(&err);
}
