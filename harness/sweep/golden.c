/* golden.c — the golden store (see golden.h): record, index, look up, list. */
#include "golden.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/fsutil.h"
#include "harness/sweep/env.h"
#include "harness/sweep/matrix.h"
#include "harness/store/store.h"

#define PATHLEN 4096

struct rp_golden_store {
    int n, cap;
    char **keys;   /* normalised config text, labels removed */
    char **dirs;
};

/* The matching key of a case: its normalised JSON without the labels. Caller frees. */
static char *config_key(const rp_case *c) {
    cJSON *j = rp_case_to_json(c);
    if (!j) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(j, "expect");
    cJSON_DeleteItemFromObjectCaseSensitive(j, "name");
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

void rp_golden_close(rp_golden_store *g) {
    if (!g) return;
    for (int i = 0; i < g->n; i++) {
        free(g->keys[i]);
        free(g->dirs[i]);
    }
    free(g->keys);
    free(g->dirs);
    free(g);
}

rp_status rp_golden_open(const char *dir, rp_golden_store **out, rp_error *err) {
    assert(dir && out);
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d) return RP_FAIL(err, RP_ERR_IO, "golden store %s: %s", dir, strerror(errno));
    rp_golden_store *g = calloc(1, sizeof *g);
    rp_case *c = malloc(sizeof *c);
    rp_status st = g && c ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    struct dirent *de;
    while (st == RP_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue; /* ., .., and recordings in progress */
        char p[PATHLEN];
        if (snprintf(p, sizeof p, "%s/%s/case.json", dir, de->d_name) >= (int)sizeof p || !rp_is_file(p)) continue;
        rp_error e;
        rp_error_clear(&e);
        if (rp_case_load(p, c, &e) != RP_OK) {
            fprintf(stderr, "repro: golden store: skipping %s: %s\n", p, e.msg);
            continue;
        }
        if (g->n == g->cap) {
            const int cap = g->cap ? 2 * g->cap : 16;
            char **k = realloc(g->keys, sizeof *k * (size_t)cap);
            if (k) g->keys = k;
            char **ds = k ? realloc(g->dirs, sizeof *ds * (size_t)cap) : NULL;
            if (ds) g->dirs = ds;
            if (!k || !ds) {
                st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
                break;
            }
            g->cap = cap;
        }
        char *key = config_key(c);
        p[strlen(p) - strlen("/case.json")] = '\0';
        char *dp = strdup(p);
        if (!key || !dp) {
            free(key);
            free(dp);
            st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
            break;
        }
        g->keys[g->n] = key;
        g->dirs[g->n++] = dp;
    }
    closedir(d);
    free(c);
    if (st != RP_OK) {
        rp_golden_close(g);
        return st;
    }
    *out = g;
    return RP_OK;
}

const char *rp_golden_find(const rp_golden_store *g, const rp_case *c) {
    assert(g && c);
    char *key = config_key(c);
    const char *found = NULL;
    for (int i = 0; key && i < g->n && !found; i++)
        if (!strcmp(g->keys[i], key)) found = g->dirs[i];
    free(key);
    return found;
}

int rp_golden_count(const rp_golden_store *g) { return g ? g->n : 0; }

rp_status rp_golden_save(const char *store, const char *src, const rp_case *c, const char *matrix_name,
                         rp_error *err) {
    assert(store && src && c);
    char id[17], tmp[PATHLEN], fin[PATHLEN];
    rp_case_id(c, id);
    if (snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%ld", store, id, (long)getpid()) >= (int)sizeof tmp ||
        snprintf(fin, sizeof fin, "%s/%s", store, id) >= (int)sizeof fin)
        return RP_FAIL(err, RP_ERR_INVALID, "golden store path too long: %s", store);
    RP_TRY(rp_store_mkdirs(store, err));
    (void)rp_store_remove_tree(tmp, NULL);
    RP_TRY(rp_store_mkdirs(tmp, err));
    /* what a later comparison reads, and the record of where it came from */
    static const rp_artifact required[] = {RP_ART_CASE, RP_ART_RESULT, RP_ART_LATENTS};
    static const rp_artifact optional[] = {RP_ART_ENV, RP_ART_DONE, RP_ART_TRACE};
    rp_status st = RP_OK;
    for (size_t k = 0; st == RP_OK && k < sizeof required / sizeof required[0] + sizeof optional / sizeof optional[0];
         k++) {
        const int req = k < sizeof required / sizeof required[0];
        const rp_artifact art = req ? required[k] : optional[k - sizeof required / sizeof required[0]];
        const char *name = rp_artifact_name(art);
        char a[PATHLEN], b[PATHLEN];
        if (rp_store_path(a, sizeof a, src, art) || rp_store_path(b, sizeof b, tmp, art)) {
            st = RP_FAIL(err, RP_ERR_INVALID, "golden: path too long under %s", src);
            break;
        }
        if (!rp_is_file(a)) {
            if (req) st = RP_FAIL(err, RP_ERR_NOT_FOUND, "golden: %s has no %s; not a finished case", src, name);
            continue;
        }
        st = rp_store_copy_file(a, b, err);
    }
    for (int i = 0; st == RP_OK && i < c->n_items; i++) {
        char a[PATHLEN], b[PATHLEN];
        if (rp_store_image_path(a, sizeof a, src, i) || rp_store_image_path(b, sizeof b, tmp, i))
            st = RP_FAIL(err, RP_ERR_INVALID, "golden: path too long under %s", src);
        else if (rp_is_file(a))
            st = rp_store_copy_file(a, b, err);
    }
    if (st == RP_OK) {
        cJSON *j = cJSON_CreateObject();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct tm tmv;
        gmtime_r(&ts.tv_sec, &tmv);
        char when[64], host[256] = "";
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tmv);
        (void)gethostname(host, sizeof host - 1);
        if (!j) st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        else {
            cJSON_AddStringToObject(j, "id", id);
            cJSON_AddStringToObject(j, "matrix", matrix_name ? matrix_name : "");
            cJSON_AddStringToObject(j, "recorded_at", when);
            cJSON_AddStringToObject(j, "host", host);
            cJSON_AddStringToObject(j, "engine", REPRO_VERSION);
            cJSON_AddStringToObject(j, "git", rp_git_revision());
            cJSON_AddStringToObject(j, "source", src);
            char p[PATHLEN];
            st = !rp_store_path(p, sizeof p, tmp, RP_ART_GOLDEN)
                     ? rp_store_write_json(p, j, err)
                     : RP_FAIL(err, RP_ERR_INVALID, "golden: path too long under %s", tmp);
            cJSON_Delete(j);
        }
    }
    if (st == RP_OK) st = rp_store_publish_dir(tmp, fin, err);
    if (st != RP_OK) (void)rp_store_remove_tree(tmp, NULL);
    return st;
}

/* "cpu: <model>" or the GPU names from an env.json. */
static void hardware_of(const char *dir, char *buf, size_t cap) {
    char p[PATHLEN];
    rp_store_path(p, sizeof p, dir, RP_ART_ENV);
    cJSON *j = NULL;
    rp_error e;
    snprintf(buf, cap, "?");
    if (rp_store_read_json(p, &j, &e) != RP_OK) return;
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(j, "gpus");
    const cJSON *g0 = cJSON_GetArrayItem(gpus, 0);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(g0, "name");
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "host"), "cpu_model");
    if (cJSON_IsString(name)) snprintf(buf, cap, "%s x%d", name->valuestring, cJSON_GetArraySize(gpus));
    else if (cJSON_IsString(cpu)) snprintf(buf, cap, "%s", cpu->valuestring);
    cJSON_Delete(j);
}

rp_status rp_golden_list(const char *dir, FILE *f, rp_error *err) {
    rp_golden_store *g = NULL;
    RP_TRY(rp_golden_open(dir, &g, err));
    rp_case *c = malloc(sizeof *c);
    if (!c) {
        rp_golden_close(g);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    }
    fprintf(f, "%-16s  %-12s %-10s %-8s %-20s %-12s %s\n", "id", "model", "degrees", "device", "recorded", "matrix",
            "hardware");
    for (int i = 0; i < g->n; i++) {
        char p[PATHLEN], deg[64], hw[256], id[17];
        rp_store_path(p, sizeof p, g->dirs[i], RP_ART_CASE);
        rp_error e;
        if (rp_case_load(p, c, &e) != RP_OK) continue;
        rp_case_id(c, id);
        rp_case_degrees_text(c, deg, sizeof deg);
        hardware_of(g->dirs[i], hw, sizeof hw);
        cJSON *j = NULL;
        rp_store_path(p, sizeof p, g->dirs[i], RP_ART_GOLDEN);
        (void)rp_store_read_json(p, &j, &e);
        const cJSON *when = cJSON_GetObjectItemCaseSensitive(j, "recorded_at");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(j, "matrix");
        const char *base = strrchr(g->dirs[i], '/');
        fprintf(f, "%-16s  %-12s %-10s %-8s %-20s %-12s %s\n", base ? base + 1 : g->dirs[i], c->model, deg, c->device,
                cJSON_IsString(when) ? when->valuestring : "?", cJSON_IsString(mx) ? mx->valuestring : "?", hw);
        cJSON_Delete(j);
    }
    fprintf(f, "%d golden(s) in %s\n", g->n, dir);
    free(c);
    rp_golden_close(g);
    return RP_OK;
}
