/* weights_cache.c — resolve the synthetic-weights cache path, generating on miss.
 *
 * Concurrency: several ranks may miss at once. Each generates the same bytes
 * into its own temp file (path.tmp.<pid>) and renames it into place; rename is
 * atomic, so a reader sees either no file or a complete one, and the last
 * writer replaces an identical file. */
#include "weights_cache.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/family_ops.h"
#include "models/registry.h"
#include "params.h"

/* mkdir -p: creates dir and its missing parents (mode 0777 & umask). */
static rp_status mkdir_p(const char *dir, rp_error *err) {
    char buf[4096];
    int n = snprintf(buf, sizeof buf, "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof buf)
        return RP_FAIL(err, RP_ERR_INVALID, "cache directory path too long: %s", dir);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            /* EEXIST also covers a concurrent creator winning the race */
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return RP_FAIL(err, RP_ERR_IO, "cannot create directory %s: %s", buf, strerror(errno));
            *p = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return RP_FAIL(err, RP_ERR_IO, "%s exists but is not a directory", dir);
    return RP_OK;
}

/* The cache root, per weights_cache.h; RP_ERR_INVALID if no variable is set. */
static rp_status cache_root(char *out, size_t cap, rp_error *err) {
    const char *v;
    int n;
    if ((v = getenv("REPRO_CACHE")) && *v) n = snprintf(out, cap, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v) n = snprintf(out, cap, "%s/repro", v);
    else if ((v = getenv("HOME")) && *v) n = snprintf(out, cap, "%s/.cache/repro", v);
    else
        return RP_FAIL(err, RP_ERR_INVALID,
                       "no weights cache directory: set REPRO_CACHE (or HOME), or pass --weights");
    if (n < 0 || (size_t)n >= cap) return RP_FAIL(err, RP_ERR_INVALID, "weights cache path too long");
    return RP_OK;
}

#ifndef REPRO_WEIGHTS_DIR
#define REPRO_WEIGHTS_DIR "engine/models" /* the build sets the source tree's absolute path */
#endif

/* The trained presets, each with its shipped file under <weights dir>/digits/. */
static const char *const TRAINED[] = {"dit-digits", "sd3-digits", "te-digits", "vae-digits"};

int rp_weights_trained(const char *model) {
    for (size_t i = 0; model && i < sizeof TRAINED / sizeof *TRAINED; i++)
        if (!strcmp(model, TRAINED[i])) return 1;
    return 0;
}

/* The shipped file of trained preset model; RP_ERR_NOT_FOUND if it is not there. */
static rp_status trained_path(const char *model, int depth, int single_depth, char *out, size_t cap,
                              rp_error *err) {
    if (depth > 0 || single_depth > 0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "model '%s' is trained (shipped weights of a fixed depth): no depth override (got %d)",
                       model, depth > 0 ? depth : single_depth);
    const char *v = getenv("REPRO_WEIGHTS_DIR");
    const char *dir = v && *v ? v : REPRO_WEIGHTS_DIR;
    int n = snprintf(out, cap, "%s/digits/%s.safetensors", dir, model);
    if (n < 0 || (size_t)n >= cap) return RP_FAIL(err, RP_ERR_INVALID, "weights path too long: %s", dir);
    if (access(out, R_OK) != 0)
        return RP_FAIL(err, RP_ERR_NOT_FOUND,
                       "trained weights of '%s' not readable at %s (%s): set REPRO_WEIGHTS_DIR to the "
                       "repository's weights/ folder, or pass --weights", model, out, strerror(errno));
    return RP_OK;
}

rp_status rp_weights_resolve(const char *model, int depth_override, uint64_t weight_seed,
                             const char *explicit_path, char *out, size_t cap, rp_error *err) {
    return rp_weights_resolve_depth(model, depth_override, 0, weight_seed, explicit_path, out, cap, err);
}

/* The cache-name suffix of a depth override: "" (preset), "-depthD", or for a family with
 * two block kinds (FLUX) with any override "-depthD-singleS" of the resolved counts. */
static rp_status depth_suffix(const char *model, const rp_family_ops *o, int depth, int single_depth, char *out,
                              size_t cap, rp_error *err) {
    out[0] = '\0';
    if (o->takes_single_depth && (depth > 0 || single_depth > 0)) {
        rp_model_facts f;
        RP_TRY(o->facts(model, depth, single_depth, &f, err));
        snprintf(out, cap, "-depth%d-single%d", f.n_double, f.n_single);
    } else if (depth > 0) {
        snprintf(out, cap, "-depth%d", depth);
    }
    return RP_OK;
}

rp_status rp_weights_resolve_depth(const char *model, int depth_override, int single_depth,
                                   uint64_t weight_seed, const char *explicit_path, char *out, size_t cap,
                                   rp_error *err) {
    assert(model && out && cap > 0);
    out[0] = '\0';
    if (explicit_path) {
        if (strlen(explicit_path) >= cap)
            return RP_FAIL(err, RP_ERR_INVALID, "weights path too long: %s", explicit_path);
        memcpy(out, explicit_path, strlen(explicit_path) + 1);
        return RP_OK;
    }
    /* Validate the model first: its name becomes part of a path. */
    const rp_family_ops *ops;
    RP_TRY(rp_model_ops(model, &ops, err));
    if (rp_weights_trained(model)) return trained_path(model, depth_override, single_depth, out, cap, err);
    if (depth_override < 0) depth_override = 0;
    char depth[64];
    RP_TRY(depth_suffix(model, ops, depth_override, single_depth, depth, sizeof depth, err));
    char dir[4096];
    RP_TRY(cache_root(dir, sizeof dir, err));
    size_t dl = strlen(dir);
    if (snprintf(dir + dl, sizeof dir - dl, "/weights") >= (int)(sizeof dir - dl))
        return RP_FAIL(err, RP_ERR_INVALID, "weights cache path too long");
    int n = snprintf(out, cap, "%s/%s%s-seed%" PRIu64 "-%s.safetensors", dir, model, depth, weight_seed,
                     RP_SYNTHETIC_INIT_VERSION);
    if (n < 0 || (size_t)n >= cap) return RP_FAIL(err, RP_ERR_INVALID, "weights cache path too long");
    if (access(out, R_OK) == 0) return RP_OK; /* hit */

    RP_TRY(mkdir_p(dir, err));
    rp_param_list l = {0};
    rp_status s = rp_model_param_specs_depth(model, depth_override, single_depth, &l, err);
    if (s == RP_OK) s = rp_params_write_synthetic(&l, model, weight_seed, out, err);
    rp_params_free(&l);
    return s;
}
