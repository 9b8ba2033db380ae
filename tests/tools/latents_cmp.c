/* latents_cmp.c — compare one item of two `repro generate --latents` files (tests only).
 *
 *   latents_cmp [--tol REL] A.safetensors IA B.safetensors IB [TENSOR ...]
 *
 * For each tensor (default: noise latents trajectory), item IA of A against item IB of B:
 * noise and latents are (B, C, h, w) with items on axis 0; trajectory is
 * (steps + 1, B, C, h, w) with items on axis 1. Prints one line per tensor:
 *   "<name>: bitwise equal (<n> values)"  or
 *   "<name>: <k> of <n> values differ, max|a - b| <d>, max|a| <m>, max <u> ulp"
 * Exit 0 when every tensor is bitwise equal, or, with --tol, when every difference is
 * within REL * max(1, max|a|) (rounding level); 1 otherwise; 2 on usage or file errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "engine/safetensors.h"

/* Signed-magnitude float bits as a monotonic integer, so |ia - ib| counts ulps. */
static int64_t ordered(float x) {
    int32_t i;
    memcpy(&i, &x, 4);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

/* dst (per) = item `item` of tensor `name` of f, items on axis `axis` (0 or 1). */
static int read_item(const rp_st_file *f, const char *path, const char *name, int item, float **dst,
                     size_t *per_out) {
    const rp_st_tensor *t = rp_st_find(f, name);
    if (!t) { fprintf(stderr, "latents_cmp: %s has no tensor '%s'\n", path, name); return 0; }
    const int axis = !strcmp(name, "trajectory") ? 1 : 0;
    if (t->ndim <= axis || item < 0 || item >= t->shape[axis]) {
        fprintf(stderr, "latents_cmp: %s: '%s' has no item %d on axis %d\n", path, name, item, axis);
        return 0;
    }
    float *all = malloc(sizeof(float) * (t->numel ? t->numel : 1)); /* the whole tensor */
    rp_error err;
    if (!all || rp_st_read_f32(f, name, t->ndim, t->shape, all, &err) != RP_OK) {
        fprintf(stderr, "latents_cmp: %s: cannot read '%s'\n", path, name);
        free(all);
        return 0;
    }
    size_t inner = 1; /* floats per item in one outer slice */
    for (int d = axis + 1; d < t->ndim; d++) inner *= (size_t)t->shape[d];
    const size_t outer = axis ? (size_t)t->shape[0] : 1, n_items = (size_t)t->shape[axis];
    *per_out = outer * inner;
    *dst = malloc(sizeof(float) * (*per_out ? *per_out : 1));
    if (!*dst) { free(all); return 0; }
    for (size_t o = 0; o < outer; o++)
        memcpy(*dst + o * inner, all + (o * n_items + (size_t)item) * inner, sizeof(float) * inner);
    free(all);
    return 1;
}

int main(int argc, char **argv) {
    double tol = -1.0;
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "--tol")) { tol = atof(argv[a + 1]); a += 2; }
    if (argc - a < 4) {
        fprintf(stderr, "usage: latents_cmp [--tol REL] A.safetensors IA B.safetensors IB [TENSOR ...]\n");
        return 2;
    }
    const char *pa = argv[a], *pb = argv[a + 2];
    const int ia = atoi(argv[a + 1]), ib = atoi(argv[a + 3]);
    const char *defaults[] = {"noise", "latents", "trajectory"};
    const char **names = argc - a > 4 ? (const char **)(argv + a + 4) : defaults;
    const int nn = argc - a > 4 ? argc - a - 4 : 3;
    rp_st_file *fa = NULL, *fb = NULL;
    rp_error err;
    if (rp_st_open(pa, &fa, &err) != RP_OK || rp_st_open(pb, &fb, &err) != RP_OK) {
        fprintf(stderr, "latents_cmp: %s\n", err.msg);
        return 2;
    }
    int rc = 0;
    for (int k = 0; k < nn && rc != 2; k++) {
        float *x = NULL, *y = NULL;
        size_t nx = 0, ny = 0;
        if (!read_item(fa, pa, names[k], ia, &x, &nx) || !read_item(fb, pb, names[k], ib, &y, &ny) || nx != ny) {
            if (x && y) fprintf(stderr, "latents_cmp: '%s' items have %zu and %zu values\n", names[k], nx, ny);
            rc = 2;
        } else {
            size_t ndiff = 0;
            double dmax = 0.0, amax = 0.0;
            int64_t umax = 0;
            for (size_t j = 0; j < nx; j++) {
                amax = fmax(amax, fabs((double)x[j]));
                if (memcmp(&x[j], &y[j], sizeof(float)) == 0) continue;
                ndiff++;
                dmax = fmax(dmax, fabs((double)x[j] - (double)y[j]));
                const int64_t u = llabs(ordered(x[j]) - ordered(y[j]));
                if (u > umax) umax = u;
            }
            if (!ndiff) {
                printf("%s: bitwise equal (%zu values)\n", names[k], nx);
            } else {
                printf("%s: %zu of %zu values differ, max|a - b| %.3e, max|a| %.3f, max %lld ulp\n", names[k], ndiff,
                       nx, dmax, amax, (long long)umax);
                if (!(tol >= 0.0 && dmax <= tol * fmax(1.0, amax))) rc = 1;
            }
        }
        free(x);
        free(y);
    }
    rp_st_close(fa);
    rp_st_close(fb);
    return rc;
}
