/* matrix.c — YAML matrix files -> the expanded list of cases (see matrix.h).
 *
 * The file is loaded with libyaml's document API, so every node keeps its
 * start mark and each error can point at the node it is about. Values are
 * typed by the YAML 1.2 core schema (plain scalars resolve to null, booleans,
 * integers, floats or strings; quoted scalars are always strings), checked
 * against the case field's type, then against the field's range, and finally
 * run through harness/case/case.c's strict reader, so anything case.c refuses is
 * refused here too, with a mark.
 *
 * Fields and their types are not listed here: they are read off case.c's
 * normalised JSON of the default case (a JSON string -> string field, an array
 * -> integer list) and, for numbers, by asking case.c's reader whether it takes
 * 0.5 (a double field) or the string "1" (a 64-bit seed). That keeps case.c the
 * one place that defines the fields; what is listed here are only the ranges
 * and value names a matrix may never break.
 *
 * Expansion (GitHub Actions matrix semantics):
 *   1. the cartesian product of the axes, first axis outermost;
 *   2. exclude: an entry drops every combination whose values (base + axes)
 *      equal all of the entry's; an entry that drops nothing is an error;
 *   3. include: an entry is added to every product combination whose original
 *      (axis) values it does not change — keys that are not axes are added, and
 *      later entries may overwrite values added by earlier ones; an entry that
 *      fits no combination becomes a combination of its own. Without axes,
 *      each include entry is a combination (and no include: the base alone);
 *   4. each combination = defaults <- base <- combination, plus the items;
 *   5. its reference = the case <- the reference overrides (default: the serial
 *      run, see default_reference); cases with the same id are one case;
 *   6. expect entries set the expected label of every case they match. */
#include "matrix.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "backends/comm.h"
#include "engine/attention/attention.h"
#include "engine/models/family_ops.h"
#include "engine/models/registry.h"
#include "engine/parallel/inject.h"
#include "engine/samplers/samplers.h"
#include "engine/strutil.h"
#include "backends/launch.h"

#define MAX_FIELDS 96
#define MAX_AXES 32
#define MAX_ENTRIES 4096 /* include / exclude / expect entries each */

typedef enum ftype { FT_STR, FT_INT, FT_U64, FT_DOUBLE, FT_INT_LIST } ftype;

typedef struct fdesc {
    char key[48];
    ftype type;
} fdesc;

/* One value set on a case: field <- v. v is owned by the set holding it. */
typedef struct assign {
    const fdesc *f;
    cJSON *v;
    yaml_mark_t mark;
    int orig; /* set by an axis (or is an include entry's own combination) */
} assign;

/* Ordered assignments; applied in order, so a later one wins. */
typedef struct aset {
    int n, cap;
    assign *a;
    yaml_mark_t mark; /* the node it came from */
} aset;

typedef struct axis {
    char key[48];
    int n;
    aset *vals;
    const yaml_node_t *node;
} axis;

typedef struct entry {
    aset a;
    char label[32];         /* expect entries */
} entry;

typedef struct entries {
    int n, cap;
    entry *e;
} entries;

/* Everything read from the file before expansion. */
typedef struct spec {
    aset base;
    uint64_t seeds[RP_CASE_MAX_ITEMS];
    int n_seeds;
    char (*prompts)[RP_CASE_MAX_STR];
    int n_prompts;
    int classes[RP_CASE_MAX_ITEMS];
    int n_classes;
    int n_axes;
    axis axes[MAX_AXES];
    const yaml_node_t *axes_node;
    entries include, exclude, expect;
    int has_ref;
    aset ref;
} spec;

typedef struct pctx {
    const char *origin;
    yaml_document_t *doc;
    rp_error *err;
    cJSON *defaults;        /* rp_case_to_json of the default case */
    int n_fields;
    fdesc fields[MAX_FIELDS];
} pctx;

/* ---- small helpers --------------------------------------------------------------- */

/* The candidate nearest to word when it is close enough to be a typo
 * (distance <= max(2, len/3)), else NULL. */
static const char *nearest(const char *word, const char *const *cands, int n) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (int i = 0; i < n; i++) {
        int d = rp_edit_distance(word, cands[i]);
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    int limit = (int)strlen(word) / 3;
    if (limit < 2) limit = 2;
    if (best && best_d <= limit) return best;
    /* a shortened key ("psnr" for "psnr_min") is no typo by distance, but clear */
    for (int i = 0; i < n && strlen(word) >= 3; i++)
        if (!strncmp(cands[i], word, strlen(word))) return cands[i];
    return NULL;
}

/* Splits a space-separated list into words (pointers into buf). Returns the count. */
static int split_words(const char *list, char *buf, size_t cap, const char **words, int max) {
    snprintf(buf, cap, "%s", list);
    int n = 0;
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && n < max; w = strtok_r(NULL, " ", &save))
        words[n++] = w;
    return n;
}


/* ---- errors with marks ------------------------------------------------------------- */

static rp_status fail_mark(pctx *x, yaml_mark_t mk, rp_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static rp_status fail_mark(pctx *x, yaml_mark_t mk, rp_status code, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return RP_FAIL(x->err, code, "%s:%zu:%zu: %s", x->origin, mk.line + 1, mk.column + 1, msg);
}

#define FAIL_AT(x, node, ...) fail_mark((x), (node)->start_mark, RP_ERR_INVALID, __VA_ARGS__)

/* ---- YAML nodes ---------------------------------------------------------------------- */

#define FOR_PAIRS(n, p) \
    for (yaml_node_pair_t *p = (n)->data.mapping.pairs.start; p < (n)->data.mapping.pairs.top; p++)
#define FOR_ITEMS(n, it) \
    for (yaml_node_item_t *it = (n)->data.sequence.items.start; it < (n)->data.sequence.items.top; it++)

static const yaml_node_t *node_at(pctx *x, int id) {
    const yaml_node_t *n = yaml_document_get_node(x->doc, id);
    assert(n); /* ids come from the loaded document itself */
    return n;
}

static int seq_len(const yaml_node_t *n) {
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

typedef enum sckind { SC_NULL, SC_BOOL, SC_INT, SC_FLOAT, SC_STR } sckind;

typedef struct scalar {
    sckind k;
    const char *s;          /* the text (NUL-terminated by libyaml) */
    int neg;                /* SC_INT: negative */
    unsigned long long mag; /* SC_INT: |value| */
    int big;                /* SC_INT: |value| >= 2^64 */
    double d;               /* SC_INT, SC_FLOAT */
    int b;                  /* SC_BOOL */
} scalar;

static int all_digits(const char *s, int base) {
    if (!*s) return 0;
    for (; *s; s++) {
        int c = (unsigned char)*s;
        int ok = base == 16 ? isxdigit(c) : base == 8 ? (c >= '0' && c <= '7') : isdigit(c);
        if (!ok) return 0;
    }
    return 1;
}

/* YAML 1.2 core-schema float syntax: [-+]?(.d+|d+(.d*)?)([eE][-+]?d+)? */
static int is_float_text(const char *s) {
    if (*s == '+' || *s == '-') s++;
    int digits = 0;
    while (isdigit((unsigned char)*s)) s++, digits++;
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) s++, digits++;
    }
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
    }
    return *s == '\0';
}

/* Resolves a scalar node's type as YAML 1.2's core schema does. */
static void resolve(const yaml_node_t *n, scalar *v) {
    assert(n->type == YAML_SCALAR_NODE);
    memset(v, 0, sizeof *v);
    const char *s = (const char *)n->data.scalar.value;
    v->s = s;
    v->k = SC_STR;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return;
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL")) {
        v->k = SC_NULL;
        return;
    }
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
        v->k = SC_BOOL;
        v->b = 1;
        return;
    }
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
        v->k = SC_BOOL;
        return;
    }
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && p[1] == 'x') base = 16, p += 2;
    else if (p[0] == '0' && p[1] == 'o') base = 8, p += 2;
    if (all_digits(p, base) && !(base != 10 && p != s + 2)) { /* 0x / 0o take no sign */
        errno = 0;
        v->k = SC_INT;
        v->neg = neg;
        v->mag = strtoull(p, NULL, base);
        v->big = errno == ERANGE;
        v->d = neg ? -(double)v->mag : (double)v->mag;
        return;
    }
    if (is_float_text(s)) {
        v->k = SC_FLOAT;
        v->d = strtod(s, NULL);
        return;
    }
    const char *t = s + (*s == '+' || *s == '-');
    if (!strcmp(t, ".inf") || !strcmp(t, ".Inf") || !strcmp(t, ".INF")) {
        v->k = SC_FLOAT;
        v->d = *s == '-' ? -INFINITY : INFINITY;
        return;
    }
    if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
        v->k = SC_FLOAT;
        v->d = NAN;
    }
}

/* "a mapping", "a list", "null", "boolean true", "integer 3", "number 2.5", "string \"x\"". */
static const char *describe(const yaml_node_t *n, char *buf, size_t cap) {
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    scalar v;
    resolve(n, &v);
    switch (v.k) {
    case SC_NULL: return "null";
    case SC_BOOL: snprintf(buf, cap, "boolean %s", v.s); break;
    case SC_INT: snprintf(buf, cap, "integer %s", v.s); break;
    case SC_FLOAT: snprintf(buf, cap, "number %s", v.s); break;
    case SC_STR: snprintf(buf, cap, "string \"%.60s%s\"", v.s, strlen(v.s) > 60 ? "..." : ""); break;
    }
    return buf;
}

static rp_status wrong_type(pctx *x, const yaml_node_t *n, const char *path, const char *expected) {
    char b[96];
    return FAIL_AT(x, n, "field '%s': expected %s, got %s", path, expected, describe(n, b, sizeof b));
}

/* Checks that mapping n has a scalar key at pair p that no earlier pair repeats;
 * returns the key text in *key. */
static rp_status map_key(pctx *x, const yaml_node_t *n, const yaml_node_pair_t *p, const char *path,
                         const char **key) {
    const yaml_node_t *k = node_at(x, p->key);
    if (k->type != YAML_SCALAR_NODE)
        return FAIL_AT(x, k, "field '%s': keys must be plain names, got %s as a key", path,
                       k->type == YAML_MAPPING_NODE ? "a mapping" : "a list");
    *key = (const char *)k->data.scalar.value;
    for (const yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
        const yaml_node_t *o = node_at(x, q->key);
        if (o->type == YAML_SCALAR_NODE && !strcmp((const char *)o->data.scalar.value, *key))
            return FAIL_AT(x, k, "field '%s%s%s': given twice (first at line %zu)", path, *path ? "." : "", *key,
                           o->start_mark.line + 1);
    }
    return RP_OK;
}

static rp_status unknown_key(pctx *x, const yaml_node_t *keynode, const char *path, const char *key,
                             const char *const *known, int n_known) {
    char full[256];
    snprintf(full, sizeof full, "%s%s%s", path, *path ? "." : "", key);
    const char *near = nearest(key, known, n_known);
    if (near) return FAIL_AT(x, keynode, "field '%s': unknown key (did you mean '%s'?)", full, near);
    char list[700] = "";
    for (int i = 0; i < n_known; i++) rp_appendf(list, sizeof list, "%s%s", i ? " " : "", known[i]);
    return FAIL_AT(x, keynode, "field '%s': unknown key; known keys: %s", full, list);
}

/* ---- the case fields, read off case.c ----------------------------------------------- */

/* 1 if case.c's reader takes {key: v} (v is consumed). */
static int case_accepts(const char *key, cJSON *v) {
    cJSON *o = cJSON_CreateObject();
    if (!o) {
        cJSON_Delete(v);
        return 0;
    }
    cJSON_AddItemToObject(o, key, v);
    rp_case *c = malloc(sizeof *c);
    rp_error e;
    rp_error_clear(&e);
    int ok = c && rp_case_from_json(o, "probe", c, &e) == RP_OK;
    free(c);
    cJSON_Delete(o);
    return ok;
}

/* Fills x->fields from the default case's JSON (see the file comment). "items"
 * is set through seeds / prompts / classes, so it is not a field here. */
static rp_status schema_init(pctx *x) {
    rp_case *c = malloc(sizeof *c);
    if (!c) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    rp_case_defaults(c);
    x->defaults = rp_case_to_json(c);
    free(c);
    if (!x->defaults) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    for (const cJSON *v = x->defaults->child; v; v = v->next) {
        if (!strcmp(v->string, "items")) continue;
        assert(x->n_fields < MAX_FIELDS);
        fdesc *f = &x->fields[x->n_fields];
        snprintf(f->key, sizeof f->key, "%s", v->string);
        if (cJSON_IsString(v)) f->type = FT_STR;
        else if (cJSON_IsArray(v)) f->type = FT_INT_LIST;
        else if (cJSON_IsNumber(v)) {
            if (case_accepts(f->key, cJSON_CreateNumber(0.5))) f->type = FT_DOUBLE;
            else if (case_accepts(f->key, cJSON_CreateString("1"))) f->type = FT_U64;
            else f->type = FT_INT;
        } else continue; /* a JSON type case.c does not use today */
        x->n_fields++;
    }
    /* "items: N" in base / axes / include: the case runs the first N items of the matrix's
     * list (seeds x prompts or classes), e.g. a 4-prompt batch next to the 8-prompt one */
    assert(x->n_fields < MAX_FIELDS);
    snprintf(x->fields[x->n_fields].key, sizeof x->fields[x->n_fields].key, "items");
    x->fields[x->n_fields++].type = FT_INT;
    return RP_OK;
}

static const fdesc *field_find(const pctx *x, const char *key) {
    for (int i = 0; i < x->n_fields; i++)
        if (!strcmp(x->fields[i].key, key)) return &x->fields[i];
    return NULL;
}

/* Known keys of a field mapping: the fields, "resolution" and extra. */
static int field_keys(const pctx *x, const char **out, int cap, const char *const *extra, int n_extra) {
    int n = 0;
    for (int i = 0; i < x->n_fields && n < cap; i++) out[n++] = x->fields[i].key;
    if (n < cap) out[n++] = "resolution";
    for (int i = 0; i < n_extra && n < cap; i++) out[n++] = extra[i];
    return n;
}

/* ---- value names and ranges a matrix may never break --------------------------------- */

/* 1 when k is a parallel degree's key (engine/parallel/strategy.h). */
static int is_degree(const char *k) {
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        if (!strcmp(k, rp_par_degree_strategy(i)->field)) return 1;
    return 0;
}
static const char *const NONNEG[] = {"depth",         "single_depth",  "width",      "height",
                                     "vae_scale_factor", "attn_q_chunk", "attn_kv_chunk", "threads",
                                     "reduce_split",  "num_pipeline_patch", "warmup_steps", "sharpen"};
static const char *const NONNEG_REAL[] = {"eta", "cfg", "guidance"};
static const char *const PRECISIONS[] = {"fp32", "bf16", "tf32", "fp16"};
static const char *const MODES[] = {"deterministic", "fast"};
static const char *const NUMERICS[] = {"default", "invariant"};
static const char *const BATCH_FORWARD[] = {"joint", "per-item"};
/* Suggestions only: acceptance asks the engine's own parsers. */
static const char *const ATTENTIONS[] = {"math", "split", "subquad", "flash", "auto"};
static const char *const BACKENDS[] = {"self", "gloo", "nccl"};
static const char *const SAMPLERS[] = {"ddim", "ddpm", "dpmpp-2m", "euler-a", "euler"};
static const char *const DEVICES[] = {"cpu", "cuda"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int in_list(const char *s, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return 1;
    return 0;
}

static rp_status bad_choice(pctx *x, const yaml_node_t *n, const char *path, const char *v,
                            const char *const *list, int k) {
    char all[512] = "";
    for (int i = 0; i < k; i++) rp_appendf(all, sizeof all, "%s%s", i ? ", " : "", list[i]);
    const char *near = nearest(v, list, k);
    if (near)
        return FAIL_AT(x, n, "field '%s': unknown value '%s' (did you mean '%s'?); expected one of %s", path, v,
                       near, all);
    return FAIL_AT(x, n, "field '%s': unknown value '%s'; expected one of %s", path, v, all);
}

static rp_status check_choice(pctx *x, const yaml_node_t *n, const char *path, const char *v,
                              const char *const *list, int k) {
    return in_list(v, list, k) ? RP_OK : bad_choice(x, n, path, v, list, k);
}

/* model (a denoiser's preset) and vae (a VAE preset or ""): names from the family table. */
static rp_status check_preset(pctx *x, const yaml_node_t *n, const char *path, const char *v, int want_vae) {
    if (want_vae && !*v) return RP_OK;
    const rp_family_ops *ops;
    rp_error e;
    rp_error_clear(&e);
    int ok = rp_model_ops(v, &ops, &e) == RP_OK && (want_vae ? ops->family == RP_FAMILY_VAE : ops->denoiser);
    if (ok) return RP_OK;
    char buf[512];
    const char *words[64];
    const int nw = split_words(want_vae ? rp_family_presets(RP_FAMILY_VAE) : rp_denoiser_presets(), buf, sizeof buf,
                               words, 64);
    return bad_choice(x, n, path, v, words, nw);
}

/* Range and name checks of one typed value v of field f (node n, for marks). */
static rp_status check_value(pctx *x, const fdesc *f, const cJSON *v, const yaml_node_t *n, const char *path) {
    const char *k = f->key;
    char b[96];
    if (f->type == FT_INT) {
        const int i = v->valueint;
        if (is_degree(k)) {
            if (i < 1) return FAIL_AT(x, n, "field '%s': a parallel degree must be >= 1, got %d", path, i);
            if (i > RP_LAUNCH_MAX_RANKS)
                return FAIL_AT(x, n, "field '%s': %d ranks; the launcher starts at most %d", path, i,
                               RP_LAUNCH_MAX_RANKS);
        } else if (!strcmp(k, "steps")) {
            if (i < 1) return FAIL_AT(x, n, "field '%s': expected steps >= 1, got %d", path, i);
        } else if (!strcmp(k, "items")) {
            if (i < 1 || i > RP_CASE_MAX_ITEMS)
                return FAIL_AT(x, n, "field '%s': the first N items of the list, 1 <= N <= %d; got %d", path,
                               RP_CASE_MAX_ITEMS, i);
        } else if (in_list(k, NONNEG, COUNT(NONNEG)) && i < 0) {
            return FAIL_AT(x, n, "field '%s': expected an integer >= 0, got %d", path, i);
        }
    } else if (f->type == FT_DOUBLE) {
        if (!isfinite(v->valuedouble))
            return FAIL_AT(x, n, "field '%s': expected a finite number, got %s", path, describe(n, b, sizeof b));
        if (in_list(k, NONNEG_REAL, COUNT(NONNEG_REAL)) && v->valuedouble < 0)
            return FAIL_AT(x, n, "field '%s': expected a number >= 0, got %s", path, describe(n, b, sizeof b));
    } else if (f->type == FT_INT_LIST) {
        if (cJSON_GetArraySize(v) > RP_CASE_MAX_STAGES)
            return FAIL_AT(x, n, "field '%s': %d entries, at most %d", path, cJSON_GetArraySize(v),
                           RP_CASE_MAX_STAGES);
        for (const cJSON *e = v->child; e; e = e->next)
            if (e->valueint < 1)
                return FAIL_AT(x, n, "field '%s': entries must be >= 1, got %d", path, e->valueint);
    } else if (f->type == FT_STR) {
        const char *s = v->valuestring;
        rp_error e;
        rp_error_clear(&e);
        if (!strcmp(k, "model")) return check_preset(x, n, path, s, 0);
        if (!strcmp(k, "vae")) return check_preset(x, n, path, s, 1);
        if (!strcmp(k, "precision")) return check_choice(x, n, path, s, PRECISIONS, COUNT(PRECISIONS));
        if (!strcmp(k, "mode")) return check_choice(x, n, path, s, MODES, COUNT(MODES));
        if (!strcmp(k, "gpu_mode")) return check_choice(x, n, path, s, MODES, COUNT(MODES));
        if (!strcmp(k, "numerics")) return check_choice(x, n, path, s, NUMERICS, COUNT(NUMERICS));
        if (!strcmp(k, "batch_forward")) return check_choice(x, n, path, s, BATCH_FORWARD, COUNT(BATCH_FORWARD));
        if (!strcmp(k, "attention")) {
            rp_attn_kind ak;
            if (rp_attn_kind_parse(s, &ak, &e) != RP_OK)
                return bad_choice(x, n, path, s, ATTENTIONS, COUNT(ATTENTIONS));
        } else if (!strcmp(k, "backend")) {
            rp_comm_kind ck;
            if (rp_comm_kind_parse(s, &ck, &e) != RP_OK) return bad_choice(x, n, path, s, BACKENDS, COUNT(BACKENDS));
        } else if (!strcmp(k, "sampler")) {
            rp_sampler_kind sk;
            if (strcmp(s, "euler") && rp_sampler_parse(s, &sk, &e) != RP_OK)
                return bad_choice(x, n, path, s, SAMPLERS, COUNT(SAMPLERS));
        } else if (!strcmp(k, "device")) {
            if (strcmp(s, "cpu") && strcmp(s, "cuda") && !(strncmp(s, "cuda:", 5) == 0 && s[5]))
                return FAIL_AT(x, n,
                               "field '%s': unknown device '%s'%s%s%s; expected cpu, cuda (any GPU) or "
                               "cuda:<name substring> (e.g. cuda:H200)",
                               path, s, nearest(s, DEVICES, COUNT(DEVICES)) ? " (did you mean '" : "",
                               nearest(s, DEVICES, COUNT(DEVICES)) ? nearest(s, DEVICES, COUNT(DEVICES)) : "",
                               nearest(s, DEVICES, COUNT(DEVICES)) ? "'?)" : "");
        } else if (!strcmp(k, "inject")) {
            rp_inject_id id;
            if (rp_inject_parse(s, &id, &e) != RP_OK) {
                char buf[512];
                const char *words[RP_INJECT_COUNT + 1];
                int nw = split_words(rp_inject_names(), buf, sizeof buf, words, RP_INJECT_COUNT + 1);
                return bad_choice(x, n, path, s, words, nw);
            }
        } else if (!strcmp(k, "expect")) {
            for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
                    return FAIL_AT(x, n, "field '%s': a label is a word like CONFIG_ERROR, got \"%s\"", path, s);
        }
    }
    return RP_OK;
}

/* ---- typed values -------------------------------------------------------------------- */

static const char *type_name(ftype t, int plural) {
    switch (t) {
    case FT_STR: return plural ? "strings" : "a string";
    case FT_INT: return plural ? "integers" : "an integer";
    case FT_U64: return plural ? "non-negative integers" : "a non-negative integer";
    case FT_DOUBLE: return plural ? "numbers" : "a number";
    case FT_INT_LIST: return plural ? "lists of integers" : "a list of integers";
    }
    return "?";
}

/* An integer scalar within [lo, hi] into *out, else a type error. */
static rp_status read_int_node(pctx *x, const yaml_node_t *n, const char *path, long long lo, long long hi,
                               const char *expected, long long *out) {
    if (n->type != YAML_SCALAR_NODE) return wrong_type(x, n, path, expected);
    scalar v;
    resolve(n, &v);
    if (v.k != SC_INT) return wrong_type(x, n, path, expected);
    if (v.big || v.mag > (unsigned long long)LLONG_MAX || (v.neg ? -(long long)v.mag : (long long)v.mag) < lo ||
        (v.neg ? -(long long)v.mag : (long long)v.mag) > hi) {
        if (v.neg && lo >= 0) return wrong_type(x, n, path, expected);
        return FAIL_AT(x, n, "field '%s': %s is out of range [%lld, %lld]", path, v.s, lo, hi);
    }
    *out = v.neg ? -(long long)v.mag : (long long)v.mag;
    return RP_OK;
}

/* Rewrites case.c's "...field 'KEY': REST" into "field 'PATH': REST". */
static void rekey(const char *msg, const char *path, char *out, size_t cap) {
    const char *p = strstr(msg, "field '");
    const char *q = p ? strstr(p + 7, "': ") : NULL;
    if (q) snprintf(out, cap, "field '%.200s': %.600s", path, q + 3);
    else snprintf(out, cap, "field '%.200s': %.600s", path, msg);
}

/* Converts node n to field f's JSON value in *out (owned by the caller), with
 * type, range and case.c checks. */
static rp_status to_value(pctx *x, const fdesc *f, const yaml_node_t *n, const char *path, cJSON **out) {
    *out = NULL;
    cJSON *v = NULL;
    if (f->type == FT_INT_LIST) {
        if (n->type != YAML_SEQUENCE_NODE) return wrong_type(x, n, path, type_name(f->type, 0));
        int vals[RP_CASE_MAX_STAGES];
        int k = 0;
        FOR_ITEMS(n, it) {
            const yaml_node_t *e = node_at(x, *it);
            char p[300];
            snprintf(p, sizeof p, "%s[%d]", path, k);
            if (k >= RP_CASE_MAX_STAGES)
                return FAIL_AT(x, n, "field '%s': more than %d entries", path, RP_CASE_MAX_STAGES);
            long long i = 0;
            RP_TRY(read_int_node(x, e, p, INT_MIN, INT_MAX, "an integer", &i));
            vals[k++] = (int)i;
        }
        v = cJSON_CreateIntArray(vals, k);
    } else {
        if (n->type != YAML_SCALAR_NODE) return wrong_type(x, n, path, type_name(f->type, 0));
        scalar s;
        resolve(n, &s);
        switch (f->type) {
        case FT_STR:
            if (s.k == SC_NULL)
                return FAIL_AT(x, n, "field '%s': expected a string, got null (write \"\" for an empty one)", path);
            if (strlen(s.s) != n->data.scalar.length)
                return FAIL_AT(x, n, "field '%s': the string contains a NUL character", path);
            v = cJSON_CreateString(s.s);
            break;
        case FT_INT: {
            long long i = 0;
            RP_TRY(read_int_node(x, n, path, INT_MIN, INT_MAX, "an integer", &i));
            v = cJSON_CreateNumber((double)i);
            break;
        }
        case FT_U64:
            if (s.k != SC_INT || s.neg) return wrong_type(x, n, path, "a non-negative integer");
            if (s.big) return FAIL_AT(x, n, "field '%s': %s does not fit in 64 bits", path, s.s);
            if (s.mag <= (1ULL << 53)) v = cJSON_CreateNumber((double)s.mag);
            else {
                char buf[32];
                snprintf(buf, sizeof buf, "%llu", s.mag);
                v = cJSON_CreateString(buf);
            }
            break;
        case FT_DOUBLE:
            if (s.k != SC_INT && s.k != SC_FLOAT) return wrong_type(x, n, path, "a number");
            v = cJSON_CreateNumber(s.d);
            break;
        case FT_INT_LIST: assert(0); break;
        }
    }
    if (!v) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    rp_status st = check_value(x, f, v, n, path);
    if (st == RP_OK && strcmp(f->key, "items") != 0) { /* items: N is the matrix's own (build_case) */
        /* the final word on a value is case.c's reader (lengths, anything it adds) */
        cJSON *o = cJSON_CreateObject();
        cJSON *d = cJSON_Duplicate(v, 1);
        if (!o || !d) {
            cJSON_Delete(o);
            cJSON_Delete(d);
            cJSON_Delete(v);
            return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        }
        cJSON_AddItemToObject(o, f->key, d);
        rp_case *c = malloc(sizeof *c);
        rp_error e;
        rp_error_clear(&e);
        if (!c) st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        else if (rp_case_from_json(o, "case", c, &e) != RP_OK) {
            char msg[900];
            rekey(e.msg, path, msg, sizeof msg);
            st = FAIL_AT(x, n, "%s", msg);
        }
        free(c);
        cJSON_Delete(o);
    }
    if (st != RP_OK) {
        cJSON_Delete(v);
        return st;
    }
    *out = v;
    return RP_OK;
}

/* ---- assignment sets ------------------------------------------------------------------ */

static void aset_free(aset *s) {
    for (int i = 0; i < s->n; i++) cJSON_Delete(s->a[i].v);
    free(s->a);
    memset(s, 0, sizeof *s);
}

/* Appends f <- v (v now owned by s). */
static rp_status aset_push(pctx *x, aset *s, const fdesc *f, cJSON *v, yaml_mark_t mark, int orig) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        assign *a = realloc(s->a, sizeof *a * (size_t)cap);
        if (!a) {
            cJSON_Delete(v);
            return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        }
        s->a = a;
        s->cap = cap;
    }
    s->a[s->n++] = (assign){f, v, mark, orig};
    return RP_OK;
}

/* Appends copies of src's assignments to dst, with orig = -1 keeping src's flag. */
static rp_status aset_extend(pctx *x, aset *dst, const aset *src, int orig) {
    for (int i = 0; i < src->n; i++) {
        cJSON *v = cJSON_Duplicate(src->a[i].v, 1);
        if (!v) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        RP_TRY(aset_push(x, dst, src->a[i].f, v, src->a[i].mark, orig < 0 ? src->a[i].orig : orig));
    }
    return RP_OK;
}

/* The last value s gives key, or NULL. orig_only: only original values. */
static const assign *aset_get(const aset *s, const char *key, int orig_only) {
    for (int i = s->n - 1; i >= 0; i--)
        if (!strcmp(s->a[i].f->key, key) && (!orig_only || s->a[i].orig)) return &s->a[i];
    return NULL;
}

/* "resolution": W (square) or [W, H] -> width and height. */
static rp_status read_resolution(pctx *x, const yaml_node_t *n, const char *path, aset *out, int orig) {
    const fdesc *fw = field_find(x, "width"), *fh = field_find(x, "height");
    if (!fw || !fh) return FAIL_AT(x, n, "field '%s': this build's cases have no width/height", path);
    const yaml_node_t *nw = n, *nh = n;
    if (n->type == YAML_SEQUENCE_NODE) {
        if (seq_len(n) != 2) return wrong_type(x, n, path, "a size in pixels or [width, height]");
        nw = node_at(x, n->data.sequence.items.start[0]);
        nh = node_at(x, n->data.sequence.items.start[1]);
    } else if (n->type != YAML_SCALAR_NODE) {
        return wrong_type(x, n, path, "a size in pixels or [width, height]");
    }
    cJSON *w, *h;
    char p[300];
    snprintf(p, sizeof p, "%s%s", path, nw == n ? "" : "[0]");
    RP_TRY(to_value(x, fw, nw, p, &w));
    RP_TRY(aset_push(x, out, fw, w, n->start_mark, orig));
    snprintf(p, sizeof p, "%s%s", path, nh == n ? "" : "[1]");
    RP_TRY(to_value(x, fh, nh, p, &h));
    return aset_push(x, out, fh, h, n->start_mark, orig);
}

/* Reads a mapping of case fields (and "resolution") into out. Keys listed in
 * extra are not fields: their value nodes go to extra_vals[i] (NULL if absent). */
static rp_status read_fields(pctx *x, const yaml_node_t *n, const char *path, aset *out, int orig,
                             const char *const *extra, int n_extra, const yaml_node_t **extra_vals) {
    if (n->type != YAML_MAPPING_NODE) return wrong_type(x, n, path, "a mapping of case fields");
    out->mark = n->start_mark;
    for (int i = 0; i < n_extra; i++) extra_vals[i] = NULL;
    FOR_PAIRS(n, p) {
        const char *key;
        RP_TRY(map_key(x, n, p, path, &key));
        const yaml_node_t *val = node_at(x, p->value);
        char sub[300];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
        int handled = 0;
        for (int i = 0; i < n_extra; i++)
            if (!strcmp(key, extra[i])) {
                extra_vals[i] = val;
                handled = 1;
            }
        if (handled) continue;
        if (!strcmp(key, "resolution")) {
            RP_TRY(read_resolution(x, val, sub, out, orig));
            continue;
        }
        const fdesc *f = field_find(x, key);
        if (!f) {
            const char *known[MAX_FIELDS + 8];
            int nk = field_keys(x, known, MAX_FIELDS + 8, extra, n_extra);
            return unknown_key(x, node_at(x, p->key), path, key, known, nk);
        }
        cJSON *v;
        RP_TRY(to_value(x, f, val, sub, &v));
        RP_TRY(aset_push(x, out, f, v, val->start_mark, orig));
    }
    return RP_OK;
}

/* Appends an entry to l; at (the entry's node) locates the error when the list is full. */
static rp_status entries_add(pctx *x, entries *l, const yaml_node_t *at, const char *path, entry **out) {
    if (l->n == MAX_ENTRIES)
        return FAIL_AT(x, at, "field '%s': more than %d entries in the list", path, MAX_ENTRIES);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        entry *e = realloc(l->e, sizeof *e * (size_t)cap);
        if (!e) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        l->e = e;
        l->cap = cap;
    }
    *out = &l->e[l->n++];
    memset(*out, 0, sizeof **out);
    return RP_OK;
}

static void entries_free(entries *l) {
    for (int i = 0; i < l->n; i++) aset_free(&l->e[i].a);
    free(l->e);
    memset(l, 0, sizeof *l);
}

/* include / exclude / expect: a list of field mappings (expect: plus "label"). */
static rp_status read_entries(pctx *x, const yaml_node_t *n, const char *path, entries *out, int is_expect) {
    if (n->type != YAML_SEQUENCE_NODE) return wrong_type(x, n, path, "a list of mappings of case fields");
    if (seq_len(n) == 0) return FAIL_AT(x, n, "field '%s': empty list (leave the key out instead)", path);
    int i = 0;
    FOR_ITEMS(n, it) {
        const yaml_node_t *e = node_at(x, *it);
        char sub[64];
        snprintf(sub, sizeof sub, "%s[%d]", path, i++);
        entry *en = NULL;
        RP_TRY(entries_add(x, out, e, path, &en));
        static const char *const label_key[] = {"label"};
        const yaml_node_t *label = NULL;
        RP_TRY(read_fields(x, e, sub, &en->a, 1, label_key, is_expect, &label));
        if (en->a.n == 0 && !is_expect) return FAIL_AT(x, e, "field '%s': empty mapping", sub);
        if (is_expect) {
            char lp[80];
            snprintf(lp, sizeof lp, "%s.label", sub);
            if (!label)
                return FAIL_AT(x, e, "field '%s': missing 'label' (the expected outcome, e.g. CONFIG_ERROR)", sub);
            cJSON *v;
            RP_TRY(to_value(x, field_find(x, "expect"), label, lp, &v));
            if (!v->valuestring[0]) {
                cJSON_Delete(v);
                return FAIL_AT(x, label, "field '%s': empty label", lp);
            }
            snprintf(en->label, sizeof en->label, "%s", v->valuestring);
            cJSON_Delete(v);
        }
    }
    return RP_OK;
}

/* ---- the top level ------------------------------------------------------------------- */

static const char *const TOP_KEYS[] = {"name",   "description", "base",      "seeds",   "prompts",
                                       "classes", "axes",       "include",   "exclude", "reference",
                                       "repeat", "timeout",     "tolerances", "expect",  "classify",
                                       "launcher", "ranks_per_node"};
static const char *const TOL_KEYS[] = {"latents_max_abs", "latents_rel_l2", "psnr_min", "ssim_min", "changed_max"};

static rp_status read_axes(pctx *x, const yaml_node_t *n, spec *sp) {
    if (n->type != YAML_MAPPING_NODE) return wrong_type(x, n, "axes", "a mapping of field: [values]");
    if (n->data.mapping.pairs.top == n->data.mapping.pairs.start)
        return FAIL_AT(x, n, "field 'axes': empty mapping; give at least one axis, or leave 'axes' out");
    sp->axes_node = n;
    FOR_PAIRS(n, p) {
        const char *key;
        RP_TRY(map_key(x, n, p, "axes", &key));
        const yaml_node_t *val = node_at(x, p->value);
        char path[128];
        snprintf(path, sizeof path, "axes.%s", key);
        const fdesc *f = field_find(x, key);
        const int res = !strcmp(key, "resolution");
        int group = 0;
        if (!f && !res) {
            /* not a field: a group axis, whose values are mappings of fields */
            group = val->type == YAML_SEQUENCE_NODE && seq_len(val) > 0;
            if (group) FOR_ITEMS(val, it) if (node_at(x, *it)->type != YAML_MAPPING_NODE) group = 0;
            if (!group) {
                const char *known[MAX_FIELDS + 8];
                int nk = field_keys(x, known, MAX_FIELDS + 8, NULL, 0);
                return unknown_key(x, node_at(x, p->key), "axes", key, known, nk);
            }
        }
        if (val->type != YAML_SEQUENCE_NODE) {
            char exp[64];
            snprintf(exp, sizeof exp, "a list of %s", res ? "sizes" : type_name(f->type, 1));
            return wrong_type(x, val, path, exp);
        }
        if (seq_len(val) == 0) return FAIL_AT(x, val, "field '%s': empty list; an axis needs at least one value", path);
        if (sp->n_axes == MAX_AXES)
            return FAIL_AT(x, node_at(x, p->key), "field '%s': more than %d axes", path, MAX_AXES);
        axis *ax = &sp->axes[sp->n_axes++];
        memset(ax, 0, sizeof *ax);
        snprintf(ax->key, sizeof ax->key, "%s", key);
        ax->node = val;
        ax->vals = calloc((size_t)seq_len(val), sizeof *ax->vals);
        if (!ax->vals) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        FOR_ITEMS(val, it) {
            const yaml_node_t *e = node_at(x, *it);
            char sub[160];
            snprintf(sub, sizeof sub, "%s[%d]", path, ax->n);
            aset *s = &ax->vals[ax->n++];
            s->mark = e->start_mark;
            if (group) RP_TRY(read_fields(x, e, sub, s, 1, NULL, 0, NULL));
            else if (res) RP_TRY(read_resolution(x, e, sub, s, 1));
            else {
                cJSON *v;
                RP_TRY(to_value(x, f, e, sub, &v));
                RP_TRY(aset_push(x, s, f, v, e->start_mark, 1));
            }
            /* a repeated value would only give the same case twice: a slip */
            for (int j = 0; j + 1 < ax->n; j++) {
                int same = ax->vals[j].n == s->n;
                for (int k = 0; same && k < s->n; k++)
                    same = ax->vals[j].a[k].f == s->a[k].f && cJSON_Compare(ax->vals[j].a[k].v, s->a[k].v, 1);
                if (same) return FAIL_AT(x, e, "field '%s': repeats %s[%d]", sub, path, j);
            }
        }
    }
    return RP_OK;
}

static rp_status read_items(pctx *x, const yaml_node_t *n, const char *key, spec *sp) {
    if (n->type != YAML_SEQUENCE_NODE) {
        const char *exp = !strcmp(key, "seeds") ? "a list of non-negative integers"
                          : !strcmp(key, "classes") ? "a list of class labels (integers >= 0)"
                                                    : "a list of strings";
        return wrong_type(x, n, key, exp);
    }
    if (seq_len(n) == 0) return FAIL_AT(x, n, "field '%s': empty list (leave the key out for the default)", key);
    if (seq_len(n) > RP_CASE_MAX_ITEMS)
        return FAIL_AT(x, n, "field '%s': %d entries; a case holds at most %d items", key, seq_len(n),
                       RP_CASE_MAX_ITEMS);
    if (!strcmp(key, "prompts")) {
        sp->prompts = calloc((size_t)seq_len(n), sizeof *sp->prompts);
        if (!sp->prompts) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    }
    int i = 0;
    FOR_ITEMS(n, it) {
        const yaml_node_t *e = node_at(x, *it);
        char sub[64];
        snprintf(sub, sizeof sub, "%s[%d]", key, i);
        if (!strcmp(key, "seeds")) {
            if (e->type != YAML_SCALAR_NODE) return wrong_type(x, e, sub, "a non-negative integer");
            scalar s;
            resolve(e, &s);
            if (s.k != SC_INT || s.neg) return wrong_type(x, e, sub, "a non-negative integer");
            if (s.big) return FAIL_AT(x, e, "field '%s': %s does not fit in 64 bits", sub, s.s);
            for (int j = 0; j < i; j++)
                if (sp->seeds[j] == s.mag) return FAIL_AT(x, e, "field '%s': seed %llu is listed twice", sub, s.mag);
            sp->seeds[i] = s.mag;
            sp->n_seeds = i + 1;
        } else if (!strcmp(key, "classes")) {
            long long c;
            RP_TRY(read_int_node(x, e, sub, 0, INT_MAX, "a class label (an integer >= 0)", &c));
            sp->classes[i] = (int)c;
            sp->n_classes = i + 1;
        } else {
            if (e->type != YAML_SCALAR_NODE) return wrong_type(x, e, sub, "a string");
            scalar s;
            resolve(e, &s);
            if (s.k == SC_NULL) return FAIL_AT(x, e, "field '%s': expected a string, got null (write \"\" for the "
                                                   "unconditional prompt)", sub);
            if (strlen(s.s) >= RP_CASE_MAX_STR || strlen(s.s) != e->data.scalar.length)
                return FAIL_AT(x, e, "field '%s': a prompt is at most %d bytes and has no NUL", sub,
                               RP_CASE_MAX_STR - 1);
            snprintf(sp->prompts[i], RP_CASE_MAX_STR, "%s", s.s);
            sp->n_prompts = i + 1;
        }
        i++;
    }
    return RP_OK;
}

static rp_status read_tolerances(pctx *x, const yaml_node_t *n, rp_tolerances *t) {
    if (n->type != YAML_MAPPING_NODE) return wrong_type(x, n, "tolerances", "a mapping");
    FOR_PAIRS(n, p) {
        const char *key;
        RP_TRY(map_key(x, n, p, "tolerances", &key));
        const yaml_node_t *v = node_at(x, p->value);
        char path[96];
        snprintf(path, sizeof path, "tolerances.%s", key);
        double *dst = !strcmp(key, "latents_max_abs")  ? &t->latents_max_abs
                      : !strcmp(key, "latents_rel_l2") ? &t->latents_rel_l2
                      : !strcmp(key, "psnr_min")       ? &t->psnr_min
                      : !strcmp(key, "ssim_min")       ? &t->ssim_min
                      : !strcmp(key, "changed_max")    ? &t->changed_max
                                                       : NULL;
        if (!dst) return unknown_key(x, node_at(x, p->key), "tolerances", key, TOL_KEYS, COUNT(TOL_KEYS));
        scalar s;
        if (v->type != YAML_SCALAR_NODE) return wrong_type(x, v, path, "a number");
        resolve(v, &s);
        if (s.k != SC_INT && s.k != SC_FLOAT) return wrong_type(x, v, path, "a number");
        if (isnan(s.d) || (s.d < 0 && strcmp(key, "psnr_min")))
            return FAIL_AT(x, v, "field '%s': expected a number >= 0, got %s", path, s.s);
        if ((!strcmp(key, "changed_max") || !strcmp(key, "ssim_min")) && s.d > 1)
            return FAIL_AT(x, v, "field '%s': a share in [0, 1], got %s", path, s.s);
        *dst = s.d;
    }
    return RP_OK;
}

static const char *const CLS_KEYS[] = {"enabled", "twins", "factor", "approx_ssim", "approx_psnr", "teacher_steps",
                                       "leak_check", "invariant_shadow"};

/* A boolean scalar into *out, else a type error. */
static rp_status read_bool_node(pctx *x, const yaml_node_t *n, const char *path, int *out) {
    scalar s;
    if (n->type != YAML_SCALAR_NODE) return wrong_type(x, n, path, "true or false");
    resolve(n, &s);
    if (s.k != SC_BOOL) return wrong_type(x, n, path, "true or false");
    *out = s.b;
    return RP_OK;
}

/* A number scalar in (lo, hi] (lo_open) or [lo, hi] into *out. */
static rp_status read_num_node(pctx *x, const yaml_node_t *n, const char *path, double lo, int lo_open, double hi,
                               const char *expected, double *out) {
    scalar s;
    if (n->type != YAML_SCALAR_NODE) return wrong_type(x, n, path, expected);
    resolve(n, &s);
    if ((s.k != SC_INT && s.k != SC_FLOAT) || isnan(s.d) || (lo_open ? !(s.d > lo) : !(s.d >= lo)) || !(s.d <= hi))
        return FAIL_AT(x, n, "field '%s': expected %s, got %s", path, expected, s.s);
    *out = s.d;
    return RP_OK;
}

/* classify: false | {enabled, twins, factor, approx_ssim, approx_psnr, teacher_steps, leak_check,
 * invariant_shadow}
 * (harness/analysis/classify.h). */
static rp_status read_classify(pctx *x, const yaml_node_t *n, rp_classify_opts *o) {
    if (n->type == YAML_SCALAR_NODE) return read_bool_node(x, n, "classify", &o->enabled);
    if (n->type != YAML_MAPPING_NODE) return wrong_type(x, n, "classify", "a mapping, or false");
    FOR_PAIRS(n, p) {
        const char *key;
        RP_TRY(map_key(x, n, p, "classify", &key));
        const yaml_node_t *v = node_at(x, p->value);
        char path[96];
        snprintf(path, sizeof path, "classify.%s", key);
        long long i;
        if (!strcmp(key, "enabled")) {
            RP_TRY(read_bool_node(x, v, path, &o->enabled));
        } else if (!strcmp(key, "leak_check")) {
            RP_TRY(read_bool_node(x, v, path, &o->leak_check));
        } else if (!strcmp(key, "invariant_shadow")) {
            RP_TRY(read_bool_node(x, v, path, &o->invariant_shadow));
        } else if (!strcmp(key, "twins")) {
            RP_TRY(read_int_node(x, v, path, RP_CLS_DEFAULT_TWINS, RP_CLS_MAX_TWINS, "an integer in [3, 6]", &i));
            o->twins = (int)i;
        } else if (!strcmp(key, "teacher_steps")) {
            RP_TRY(read_int_node(x, v, path, 0, 100000, "an integer >= 0 (0: every step)", &i));
            o->teacher_steps = (int)i;
        } else if (!strcmp(key, "factor")) {
            RP_TRY(read_num_node(x, v, path, 1, 1, 1e300, "a number > 1", &o->factor));
        } else if (!strcmp(key, "approx_ssim")) {
            RP_TRY(read_num_node(x, v, path, -1, 0, 1, "an SSIM in [-1, 1]", &o->approx_ssim));
        } else if (!strcmp(key, "approx_psnr")) {
            RP_TRY(read_num_node(x, v, path, 0, 1, 1e300, "a PSNR in dB > 0", &o->approx_psnr));
        } else {
            return unknown_key(x, node_at(x, p->key), "classify", key, CLS_KEYS, COUNT(CLS_KEYS));
        }
    }
    return RP_OK;
}

/* 1 if name can be a results directory name. */
static int safe_name(const char *s) {
    if (!*s || *s == '.' || strlen(s) >= 128) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.') return 0;
    return 1;
}

static rp_status read_root(pctx *x, const yaml_node_t *root, spec *sp, rp_matrix *m) {
    if (root->type != YAML_MAPPING_NODE) return wrong_type(x, root, "(top level)", "a mapping");
    const yaml_node_t *seeds = NULL;
    FOR_PAIRS(root, p) {
        const char *key;
        RP_TRY(map_key(x, root, p, "", &key));
        const yaml_node_t *v = node_at(x, p->value);
        if (!strcmp(key, "name") || !strcmp(key, "description")) {
            if (v->type != YAML_SCALAR_NODE) return wrong_type(x, v, key, "a string");
            const char *s = (const char *)v->data.scalar.value;
            if (!strcmp(key, "name")) {
                if (!safe_name(s))
                    return FAIL_AT(x, v, "field 'name': \"%s\" cannot name a results directory (letters, digits, "
                                         "'-', '_', '.'; not starting with '.'; < 128 characters)", s);
                snprintf(m->name, sizeof m->name, "%s", s);
            } else {
                snprintf(m->description, sizeof m->description, "%s", s);
            }
        } else if (!strcmp(key, "base")) {
            RP_TRY(read_fields(x, v, "base", &sp->base, 0, NULL, 0, NULL));
        } else if (!strcmp(key, "seeds") || !strcmp(key, "prompts") || !strcmp(key, "classes")) {
            if (!strcmp(key, "seeds")) seeds = v;
            RP_TRY(read_items(x, v, key, sp));
        } else if (!strcmp(key, "axes")) {
            RP_TRY(read_axes(x, v, sp));
        } else if (!strcmp(key, "include")) {
            RP_TRY(read_entries(x, v, "include", &sp->include, 0));
        } else if (!strcmp(key, "exclude")) {
            RP_TRY(read_entries(x, v, "exclude", &sp->exclude, 0));
        } else if (!strcmp(key, "expect")) {
            RP_TRY(read_entries(x, v, "expect", &sp->expect, 1));
        } else if (!strcmp(key, "reference")) {
            RP_TRY(read_fields(x, v, "reference", &sp->ref, 0, NULL, 0, NULL));
            if (sp->ref.n == 0) return FAIL_AT(x, v, "field 'reference': empty mapping (leave it out for the default)");
            sp->has_ref = 1;
        } else if (!strcmp(key, "repeat")) {
            long long r;
            RP_TRY(read_int_node(x, v, "repeat", 1, RP_MATRIX_MAX_REPEAT, "an integer >= 1", &r));
            m->repeat = (int)r;
        } else if (!strcmp(key, "timeout")) {
            scalar s;
            if (v->type != YAML_SCALAR_NODE) return wrong_type(x, v, "timeout", "a number of seconds");
            resolve(v, &s);
            if ((s.k != SC_INT && s.k != SC_FLOAT) || !(s.d > 0) || !isfinite(s.d))
                return wrong_type(x, v, "timeout", "a number of seconds > 0");
            m->timeout_s = s.d;
        } else if (!strcmp(key, "launcher")) {
            if (v->type != YAML_SCALAR_NODE) return wrong_type(x, v, "launcher", "local, srun or mpirun");
            const char *s = (const char *)v->data.scalar.value;
            if (strcmp(s, "local") && strcmp(s, "srun") && strcmp(s, "mpirun"))
                return FAIL_AT(x, v, "field 'launcher': \"%s\" is not a launcher; use local, srun or mpirun", s);
            snprintf(m->launcher, sizeof m->launcher, "%s", s);
        } else if (!strcmp(key, "ranks_per_node")) {
            long long r;
            RP_TRY(read_int_node(x, v, "ranks_per_node", 1, RP_LAUNCH_MAX_RANKS, "an integer >= 1", &r));
            m->ranks_per_node = (int)r;
        } else if (!strcmp(key, "tolerances")) {
            RP_TRY(read_tolerances(x, v, &m->tol));
        } else if (!strcmp(key, "classify")) {
            RP_TRY(read_classify(x, v, &m->cls));
        } else {
            return unknown_key(x, node_at(x, p->key), "", key, TOP_KEYS, COUNT(TOP_KEYS));
        }
    }
    /* A matrix may give both: DiT cases take the classes, SD3/FLUX cases the prompts (one
     * file can then sweep every family, as nightly.yaml does). The item bound holds for both. */
    const int per_seed = sp->n_prompts > sp->n_classes ? sp->n_prompts : sp->n_classes ? sp->n_classes : 1;
    const int n_items = (sp->n_seeds ? sp->n_seeds : 1) * per_seed;
    if (n_items > RP_CASE_MAX_ITEMS)
        return FAIL_AT(x, seeds, "field 'seeds': %d seeds x %d %s = %d items; a case holds at most %d",
                       sp->n_seeds, per_seed, sp->n_prompts >= sp->n_classes ? "prompts" : "classes", n_items,
                       RP_CASE_MAX_ITEMS);
    return RP_OK;
}

/* ---- expansion ------------------------------------------------------------------------ */

typedef struct combo {
    aset a;
    yaml_mark_t mark;
} combo;

/* The value base + a give key (a may be NULL), else the default. */
static const cJSON *effective(const pctx *x, const aset *base, const aset *a, const char *key) {
    const assign *s = a ? aset_get(a, key, 0) : NULL;
    if (!s) s = aset_get(base, key, 0);
    return s ? s->v : cJSON_GetObjectItemCaseSensitive(x->defaults, key);
}

static int entry_matches(const pctx *x, const aset *base, const aset *a, const aset *e) {
    for (int i = 0; i < e->n; i++)
        if (!cJSON_Compare(effective(x, base, a, e->a[i].f->key), e->a[i].v, 1)) return 0;
    return 1;
}

/* 1 if include entry e can be added to combination a: it changes none of a's original values. */
static int include_fits(const aset *a, const aset *e) {
    for (int i = 0; i < e->n; i++) {
        const assign *o = aset_get(a, e->a[i].f->key, 1);
        if (o && !cJSON_Compare(o->v, e->a[i].v, 1)) return 0;
    }
    return 1;
}

/* A value for names and tables: strings as they are, numbers with %g, lists as JSON. */
static void value_text(const cJSON *v, char *buf, size_t cap) {
    if (cJSON_IsString(v)) snprintf(buf, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(buf, cap, "%.10g", v->valuedouble);
    else {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(buf, cap, "%s", s ? s : "?");
        free(s);
    }
}

/* Builds the case defaults <- base <- a <- over (each may be NULL but base),
 * with the items of sp. For a reference (over != NULL) the labels are cleared. */
static rp_status build_case(pctx *x, const spec *sp, const aset *a, const aset *over, yaml_mark_t mark,
                            rp_case *out) {
    cJSON *o = cJSON_Duplicate(x->defaults, 1);
    if (!o) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    const aset *layers[3] = {&sp->base, a, over};
    rp_status st = RP_OK;
    for (int l = 0; l < 3 && st == RP_OK; l++)
        for (int i = 0; layers[l] && i < layers[l]->n && st == RP_OK; i++) {
            cJSON *v = cJSON_Duplicate(layers[l]->a[i].v, 1);
            if (!v || !cJSON_ReplaceItemInObjectCaseSensitive(o, layers[l]->a[i].f->key, v)) {
                cJSON_Delete(v);
                st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
            }
        }
    if (st == RP_OK && over) {
        cJSON_ReplaceItemInObjectCaseSensitive(o, "expect", cJSON_CreateString(""));
        cJSON_ReplaceItemInObjectCaseSensitive(o, "name", cJSON_CreateString(""));
    }
    /* items: for each prompt (or class), each seed — diffusers' num_images_per_prompt order */
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    const rp_family_ops *ops = rp_family_ops_of(RP_FAMILY_DIT); /* the default case's */
    if (cJSON_IsString(model)) (void)rp_model_ops(model->valuestring, &ops, NULL);
    const int class_cond = ops->cond == RP_COND_CLASS;
    /* items: N (a number where the defaults hold the list): keep the first N */
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(o, "items");
    int limit = cJSON_IsNumber(lim) ? lim->valueint : 0, n_built = 0;
    cJSON *items = cJSON_CreateArray();
    const int n_seeds = sp->n_seeds ? sp->n_seeds : 1;
    /* which list: the family's own when the matrix gives both, else the one given (a DiT
     * case given only prompts keeps them, so validation names the mistake) */
    const int use_classes = sp->n_classes && (class_cond || !sp->n_prompts);
    const int use_prompts = sp->n_prompts && !use_classes;
    const int per = use_prompts ? sp->n_prompts : use_classes ? sp->n_classes : 1;
    if (limit > per * n_seeds)
        st = fail_mark(x, mark, RP_ERR_INVALID, "field 'items': %d, but the matrix gives %d items (%d seeds x %d %s)",
                       limit, per * n_seeds, n_seeds, per, use_prompts ? "prompts" : use_classes ? "classes" : "item");
    for (int p = 0; st == RP_OK && items && p < per; p++)
        for (int s = 0; s < n_seeds && (!limit || n_built < limit); s++, n_built++) {
            cJSON *it = cJSON_CreateObject();
            if (!it) break;
            cJSON_AddItemToArray(items, it);
            const uint64_t seed = sp->n_seeds ? sp->seeds[s] : 0;
            if (seed <= (1ULL << 53)) cJSON_AddNumberToObject(it, "seed", (double)seed);
            else {
                char b[32];
                snprintf(b, sizeof b, "%llu", (unsigned long long)seed);
                cJSON_AddStringToObject(it, "seed", b);
            }
            /* class -1 marks "no class" for the text models; DiT without classes: class 0 */
            const int cls = use_classes ? sp->classes[p] : class_cond ? 0 : -1;
            cJSON_AddNumberToObject(it, "class", cls);
            cJSON_AddStringToObject(it, "prompt", use_prompts ? sp->prompts[p] : "");
        }
    if (st == RP_OK && (!items || !cJSON_ReplaceItemInObjectCaseSensitive(o, "items", items))) {
        cJSON_Delete(items);
        st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    } else if (st != RP_OK) {
        cJSON_Delete(items);
    }
    if (st == RP_OK) {
        rp_error e;
        rp_error_clear(&e);
        if (rp_case_from_json(o, "case", out, &e) != RP_OK) st = fail_mark(x, mark, RP_ERR_INVALID, "%s", e.msg);
    }
    cJSON_Delete(o);
    return st;
}

/* The reference overrides when the file gives none: the serial run of the
 * same case (one rank, no strategy options, no injected fault). */
static rp_status default_reference(pctx *x, aset *ref) {
    static const struct { const char *key; int v; } ints[] = {{"num_pipeline_patch", 0}, {"warmup_steps", 1}};
    yaml_mark_t none = {0, 0, 0};
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) { /* every degree 1 */
        const fdesc *f = field_find(x, rp_par_degree_strategy(i)->field);
        if (f) RP_TRY(aset_push(x, ref, f, cJSON_CreateNumber(1), none, 0));
    }
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const fdesc *f = field_find(x, ints[i].key);
        if (f) RP_TRY(aset_push(x, ref, f, cJSON_CreateNumber(ints[i].v), none, 0));
    }
    const fdesc *f;
    if ((f = field_find(x, "pipefusion_layers"))) RP_TRY(aset_push(x, ref, f, cJSON_CreateArray(), none, 0));
    if ((f = field_find(x, "backend"))) RP_TRY(aset_push(x, ref, f, cJSON_CreateString("self"), none, 0));
    if ((f = field_find(x, "inject"))) RP_TRY(aset_push(x, ref, f, cJSON_CreateString(""), none, 0));
    for (int i = 0; i < ref->n; i++)
        if (!ref->a[i].v) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    return RP_OK;
}

/* "k=v k=v" over the varying fields (indices vary[0..n)), from the case's JSON. */
static void auto_name(const pctx *x, const rp_case *c, const int *vary, int n, char *out, size_t cap) {
    cJSON *j = rp_case_to_json(c);
    out[0] = '\0';
    for (int i = 0; j && i < n; i++) {
        const char *key = x->fields[vary[i]].key;
        char v[96];
        if (!strcmp(key, "items")) snprintf(v, sizeof v, "%d", c->n_items); /* the count, not the list */
        else value_text(cJSON_GetObjectItemCaseSensitive(j, key), v, sizeof v);
        rp_appendf(out, cap, "%s%s=%s", out[0] ? " " : "", key, v);
    }
    cJSON_Delete(j);
    if (!out[0]) snprintf(out, cap, "base");
}

/* The mark of the assignment that made the world largest (for the error). */
static yaml_mark_t degree_mark(const spec *sp, const aset *a, yaml_mark_t fallback) {
    for (int d = 0; d < RP_PAR_N_DEGREES; d++) {
        const char *key = rp_par_degree_strategy(d)->field;
        const assign *s = aset_get(a, key, 0);
        if (!s) s = aset_get(&sp->base, key, 0);
        if (s && s->v->valueint > 1) fallback = s->mark;
    }
    return fallback;
}

/* The world of c without int overflow (the degrees are not validated yet). */
static long long world_of(const rp_case *c) {
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    return rp_par_world_ll(&d);
}

static rp_status push_case(pctx *x, rp_matrix_case **arr, int *n, int *cap, const rp_matrix_case *c) {
    if (*n >= RP_MATRIX_MAX_CASES)
        return RP_FAIL(x->err, RP_ERR_INVALID, "%s: more than %d cases after expansion", x->origin,
                       RP_MATRIX_MAX_CASES);
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        rp_matrix_case *na = realloc(*arr, sizeof *na * (size_t)nc);
        if (!na) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = *c;
    return RP_OK;
}

static int find_id(const rp_matrix_case *arr, int n, const char *id) {
    for (int i = 0; i < n; i++)
        if (!strcmp(arr[i].id, id)) return i;
    return -1;
}

static rp_status expand(pctx *x, spec *sp, rp_matrix *m) {
    combo *combos = NULL;
    int n_combos = 0, n_product = 1;
    rp_matrix_case *sw = NULL, *refs = NULL, *all = NULL;
    int n_sw = 0, cap_sw = 0, n_refs = 0, cap_refs = 0, n_all = 0, cap_all = 0;
    int *ref_of = NULL;
    unsigned char *excl_hits = NULL, *expect_hits = NULL;
    aset defref = {0};
    rp_matrix_case *tmp = malloc(sizeof *tmp);
    rp_status st = tmp ? RP_OK : RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    const yaml_mark_t axes_mark = sp->axes_node ? sp->axes_node->start_mark : (yaml_mark_t){0, 0, 0};

    /* 1. the product (no axes: one empty combination, or the include entries) */
    for (int i = 0; i < sp->n_axes; i++) {
        if ((long long)n_product * sp->axes[i].n > RP_MATRIX_MAX_CASES) {
            st = fail_mark(x, axes_mark, RP_ERR_INVALID, "field 'axes': more than %d combinations",
                           RP_MATRIX_MAX_CASES);
            break;
        }
        n_product *= sp->axes[i].n;
    }
    if (st == RP_OK && sp->n_axes == 0) n_product = sp->include.n ? 0 : 1;
    const int max_combos = n_product + sp->include.n;
    if (st == RP_OK) {
        combos = calloc((size_t)(max_combos ? max_combos : 1), sizeof *combos);
        excl_hits = calloc((size_t)sp->exclude.n + 1, 1);
        expect_hits = calloc((size_t)sp->expect.n + 1, 1);
        if (!combos || !excl_hits || !expect_hits) st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    }
    for (int c = 0; st == RP_OK && c < n_product; c++) {
        combo *cb = &combos[n_combos];
        cb->mark = sp->n_axes ? axes_mark : sp->base.mark;
        int pick[MAX_AXES], rest = c;
        for (int i = sp->n_axes - 1; i >= 0; i--) { /* the last axis varies fastest */
            pick[i] = rest % sp->axes[i].n;
            rest /= sp->axes[i].n;
        }
        /* in axis order, so a key two axes set takes the later axis's value */
        for (int i = 0; i < sp->n_axes && st == RP_OK; i++) st = aset_extend(x, &cb->a, &sp->axes[i].vals[pick[i]], 1);
        /* names from several group axes join in axis order ("4 prompts" + "dp=2") */
        char joined[RP_CASE_MAX_STR] = "";
        int n_named = 0;
        const assign *last_name = NULL;
        for (int i = 0; i < sp->n_axes && st == RP_OK; i++) {
            const assign *nm = aset_get(&sp->axes[i].vals[pick[i]], "name", 0);
            if (!nm || !cJSON_IsString(nm->v)) continue;
            rp_appendf(joined, sizeof joined, "%s%s", n_named++ ? " " : "", nm->v->valuestring);
            last_name = nm;
        }
        if (st == RP_OK && n_named > 1) {
            cJSON *v = cJSON_CreateString(joined);
            st = v ? aset_push(x, &cb->a, last_name->f, v, last_name->mark, 1)
                   : RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        }
        if (st != RP_OK) break;
        n_combos++;
        /* 2. exclude */
        for (int e = 0; e < sp->exclude.n; e++)
            if (entry_matches(x, &sp->base, &cb->a, &sp->exclude.e[e].a)) {
                excl_hits[e] = 1;
                aset_free(&cb->a);
                n_combos--;
                break;
            }
    }
    for (int e = 0; st == RP_OK && e < sp->exclude.n; e++)
        if (!excl_hits[e])
            st = fail_mark(x, sp->exclude.e[e].a.mark, RP_ERR_INVALID,
                           "field 'exclude[%d]': matches no combination of the axes", e);
    /* 3. include */
    const int n_orig = n_combos;
    for (int e = 0; st == RP_OK && e < sp->include.n; e++) {
        const aset *en = &sp->include.e[e].a;
        int fitted = 0;
        for (int c = 0; c < n_orig && st == RP_OK; c++)
            if (include_fits(&combos[c].a, en)) {
                st = aset_extend(x, &combos[c].a, en, 0);
                fitted = 1;
            }
        if (st == RP_OK && !fitted) {
            combo *cb = &combos[n_combos++];
            cb->mark = en->mark;
            st = aset_extend(x, &cb->a, en, 1);
        }
    }
    /* the varying keys name the cases: the axes' keys in axis order, then the include entries' */
    int vary[MAX_FIELDS], n_vary = 0;
    for (int i = 0; i < sp->n_axes + sp->include.n; i++)
        for (int k = 0; k < (i < sp->n_axes ? sp->axes[i].n : 1); k++) {
            const aset *src = i < sp->n_axes ? &sp->axes[i].vals[k] : &sp->include.e[i - sp->n_axes].a;
            for (int a = 0; a < src->n; a++) {
                const int fi = (int)(src->a[a].f - x->fields);
                int seen = !strcmp(x->fields[fi].key, "name") || !strcmp(x->fields[fi].key, "expect");
                for (int v = 0; v < n_vary && !seen; v++) seen = vary[v] == fi;
                if (!seen) vary[n_vary++] = fi;
            }
        }
    /* 4. the swept cases */
    for (int c = 0; st == RP_OK && c < n_combos; c++) {
        memset(tmp, 0, sizeof *tmp);
        st = build_case(x, sp, &combos[c].a, NULL, combos[c].mark, &tmp->c);
        if (st != RP_OK) break;
        if (!tmp->c.name[0]) auto_name(x, &tmp->c, vary, n_vary, tmp->c.name, sizeof tmp->c.name);
        const long long world = world_of(&tmp->c);
        if (world > RP_LAUNCH_MAX_RANKS) {
            char nm[sizeof tmp->c.name];
            rp_case_display_name(tmp->c.name, 0, nm, sizeof nm);
            st = fail_mark(x, degree_mark(sp, &combos[c].a, combos[c].mark), RP_ERR_INVALID,
                           "case '%s': the degrees give a world of %lld ranks; the launcher starts at most %d",
                           nm, world, RP_LAUNCH_MAX_RANKS);
            break;
        }
        rp_case_id(&tmp->c, tmp->id);
        tmp->swept = 1;
        tmp->line = (int)combos[c].mark.line + 1;
        tmp->col = (int)combos[c].mark.column + 1;
        if (find_id(sw, n_sw, tmp->id) >= 0) continue; /* the same case twice (include overlap) */
        st = push_case(x, &sw, &n_sw, &cap_sw, tmp);
    }
    /* 5. references */
    const aset *ref = &sp->ref;
    if (st == RP_OK && !sp->has_ref) {
        st = default_reference(x, &defref);
        ref = &defref;
    }
    if (st == RP_OK && n_sw) {
        ref_of = malloc(sizeof *ref_of * (size_t)n_sw);
        if (!ref_of) st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    }
    for (int i = 0; st == RP_OK && i < n_sw; i++) {
        /* the case's own values as assignments, then the overrides */
        cJSON *j = rp_case_to_json(&sw[i].c);
        aset own = {0};
        for (int f = 0; j && st == RP_OK && f < x->n_fields; f++) {
            /* items: the case's are always the first n_items of the list; say so by count */
            cJSON *v = !strcmp(x->fields[f].key, "items")
                           ? cJSON_CreateNumber(sw[i].c.n_items)
                           : cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, x->fields[f].key), 1);
            st = v ? aset_push(x, &own, &x->fields[f], v, sp->base.mark, 0)
                   : RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        }
        cJSON_Delete(j);
        if (st == RP_OK) st = aset_extend(x, &own, ref, 0);
        memset(tmp, 0, sizeof *tmp);
        const yaml_mark_t mk =
            sp->has_ref ? sp->ref.mark : (yaml_mark_t){0, (size_t)sw[i].line - 1, (size_t)sw[i].col - 1};
        if (st == RP_OK) st = build_case(x, sp, &own, NULL, mk, &tmp->c);
        aset_free(&own);
        if (st != RP_OK) break;
        /* a reference is what a case's drift is measured from: an approximate layout (stale
         * activations after warmup) has no rounding envelope, and one that a case resolves to
         * itself makes that case "the reference", compared with nothing (a reference line that
         * resets dp and the sequence degrees but not pipefusion or patch) */
        if (rp_case_exactness(&tmp->c) != RP_PAR_EXACT) {
            char nm[sizeof sw[i].c.name];
            rp_case_display_name(sw[i].c.name, 0, nm, sizeof nm);
            /* a one-stage pipeline (num_pipeline_patch kept) is PipeFusion's emulation: approximate too */
            const int pipe1 = tmp->c.pipefusion == 1 && rp_case_pipeline_patches(&tmp->c);
            char npp[48] = "";
            if (pipe1) snprintf(npp, sizeof npp, ", num_pipeline_patch %d", tmp->c.num_pipeline_patch);
            st = fail_mark(x, mk, RP_ERR_INVALID, "field 'reference': the reference of case '%s' is an approximate "
                           "layout (pipefusion %d%s, patch %d): a reference must be exact; give the reference "
                           "pipefusion: 1%s and patch: 1 (the default reference is the serial run)", nm,
                           tmp->c.pipefusion, npp, tmp->c.patch, pipe1 ? ", num_pipeline_patch: 0" : "");
            break;
        }
        tmp->c.expect[0] = '\0';
        tmp->c.name[0] = '\0';
        rp_case_id(&tmp->c, tmp->id);
        int k = find_id(sw, n_sw, tmp->id);
        if (k >= 0) {
            ref_of[i] = k;
            sw[k].is_ref = 1;
            continue;
        }
        k = find_id(refs, n_refs, tmp->id);
        if (k < 0) {
            if (world_of(&tmp->c) > RP_LAUNCH_MAX_RANKS) {
                char nm[sizeof sw[i].c.name];
                rp_case_display_name(sw[i].c.name, 0, nm, sizeof nm);
                st = fail_mark(x, mk, RP_ERR_INVALID, "field 'reference': the reference of case '%s' has a world "
                               "of %lld ranks; at most %d", nm, world_of(&tmp->c), RP_LAUNCH_MAX_RANKS);
                break;
            }
            char nm[sizeof tmp->c.name - 8];
            auto_name(x, &tmp->c, vary, n_vary, nm, sizeof nm);
            snprintf(tmp->c.name, sizeof tmp->c.name, "ref %s", nm);
            tmp->is_ref = 1;
            tmp->line = (int)mk.line + 1;
            tmp->col = (int)mk.column + 1;
            st = push_case(x, &refs, &n_refs, &cap_refs, tmp);
            k = n_refs - 1;
        }
        ref_of[i] = -1 - k; /* negative: an index into refs */
    }
    /* order: each reference just before the first case that uses it */
    int *pos_sw = NULL, *pos_ref = NULL;
    if (st == RP_OK) {
        pos_sw = malloc(sizeof *pos_sw * (size_t)(n_sw + 1));
        pos_ref = malloc(sizeof *pos_ref * (size_t)(n_refs + 1));
        if (!pos_sw || !pos_ref) st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        for (int i = 0; st == RP_OK && i < n_sw; i++) pos_sw[i] = -1;
        for (int i = 0; st == RP_OK && i < n_refs; i++) pos_ref[i] = -1;
    }
    for (int i = 0; st == RP_OK && i < n_sw; i++) {
        const int r = ref_of[i];
        int *rp = r >= 0 ? &pos_sw[r] : &pos_ref[-1 - r];
        if (*rp < 0) {
            st = push_case(x, &all, &n_all, &cap_all, r >= 0 ? &sw[r] : &refs[-1 - r]);
            *rp = n_all - 1;
        }
        if (st == RP_OK && pos_sw[i] < 0) {
            st = push_case(x, &all, &n_all, &cap_all, &sw[i]);
            pos_sw[i] = n_all - 1;
        }
        if (st == RP_OK) all[pos_sw[i]].ref = *rp;
    }
    for (int i = 0; st == RP_OK && i < n_all; i++)
        if (all[i].is_ref) all[i].ref = i;
    /* 6. expected labels */
    for (int i = 0; st == RP_OK && i < n_all; i++) {
        cJSON *j = rp_case_to_json(&all[i].c);
        if (!j) st = RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
        for (int e = 0; st == RP_OK && e < sp->expect.n; e++) {
            const aset *en = &sp->expect.e[e].a;
            int match = 1;
            for (int k = 0; match && k < en->n; k++)
                match = cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, en->a[k].f->key), en->a[k].v, 1);
            if (match) {
                snprintf(all[i].c.expect, sizeof all[i].c.expect, "%s", sp->expect.e[e].label);
                expect_hits[e] = 1;
            }
        }
        cJSON_Delete(j);
    }
    for (int e = 0; st == RP_OK && e < sp->expect.n; e++)
        if (!expect_hits[e])
            st = fail_mark(x, sp->expect.e[e].a.mark, RP_ERR_INVALID, "field 'expect[%d]': matches no case", e);
    if (st == RP_OK && n_all == 0)
        st = fail_mark(x, axes_mark, RP_ERR_INVALID, "the matrix expands to no case");
    if (st == RP_OK) {
        m->cases = all;
        m->n_cases = n_all;
        all = NULL;
    }
    for (int c = 0; c < max_combos && combos; c++) aset_free(&combos[c].a);
    free(combos);
    free(sw);
    free(refs);
    free(all);
    free(ref_of);
    free(pos_sw);
    free(pos_ref);
    free(excl_hits);
    free(expect_hits);
    free(tmp);
    aset_free(&defref);
    return st;
}

static void spec_free(spec *sp) {
    aset_free(&sp->base);
    aset_free(&sp->ref);
    free(sp->prompts);
    for (int i = 0; i < sp->n_axes; i++) {
        for (int k = 0; k < sp->axes[i].n; k++) aset_free(&sp->axes[i].vals[k]);
        free(sp->axes[i].vals);
    }
    entries_free(&sp->include);
    entries_free(&sp->exclude);
    entries_free(&sp->expect);
}

/* ---- public ------------------------------------------------------------------------------ */

static void name_from_path(const char *origin, char *out, size_t cap) {
    const char *b = strrchr(origin, '/');
    b = b ? b + 1 : origin;
    snprintf(out, cap, "%s", b);
    size_t l = strlen(out);
    if (l > 5 && !strcmp(out + l - 5, ".yaml")) out[l - 5] = '\0';
    else if (l > 4 && !strcmp(out + l - 4, ".yml")) out[l - 4] = '\0';
}

/* A libyaml load error as one line: "origin:L:C: YAML syntax: problem (context)". */
static rp_status yaml_fail(pctx *x, const yaml_parser_t *p) {
    yaml_mark_t mk = p->problem_mark;
    if (p->error == YAML_MEMORY_ERROR)
        return RP_FAIL(x->err, RP_ERR_NOMEM, "%s: out of memory reading YAML", x->origin);
    char ctx[200] = "";
    if (p->context)
        snprintf(ctx, sizeof ctx, " (%s at line %zu, column %zu)", p->context, p->context_mark.line + 1,
                 p->context_mark.column + 1);
    return fail_mark(x, mk, RP_ERR_FORMAT, "YAML syntax: %s%s", p->problem ? p->problem : "malformed", ctx);
}

/* Deepest nesting of sequences and mappings a matrix may use (a real one uses 4). */
#define MAX_DEPTH 32

/* Streams text's events once before it is loaded: rejects nesting deeper than MAX_DEPTH
 * (libyaml's scanner checks every open flow level at each token, so deep nesting costs
 * quadratic time; stopping at the first too-deep node keeps it bounded) and a NUL in any
 * scalar (C strings would silently cut it: "ok\0/../x" would read as "ok"). */
static rp_status prescan(pctx *x, const char *text, size_t len) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return RP_FAIL(x->err, RP_ERR_NOMEM, "matrix: out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    rp_status st = RP_OK;
    int depth = 0, done = 0;
    while (st == RP_OK && !done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = yaml_fail(x, &p);
            break;
        }
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > MAX_DEPTH)
                st = fail_mark(x, ev.start_mark, RP_ERR_INVALID, "nested deeper than %d levels; a matrix "
                               "nests a few", MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_SCALAR_EVENT:
            if (memchr(ev.data.scalar.value, '\0', ev.data.scalar.length))
                st = fail_mark(x, ev.start_mark, RP_ERR_INVALID, "a NUL character (\\0) in a string; not allowed");
            break;
        case YAML_STREAM_END_EVENT: done = 1; break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return st;
}

rp_status rp_matrix_parse(const char *text, size_t len, const char *origin, rp_matrix *m, rp_error *err) {
    assert(text && origin && m);
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", origin);
    m->repeat = 1;
    m->timeout_s = 900;
    m->tol = (rp_tolerances){NAN, NAN, NAN, NAN, NAN};
    rp_classify_opts_default(&m->cls);
    pctx x = {.origin = origin, .err = err};
    spec *sp = calloc(1, sizeof *sp);
    if (!sp) return RP_FAIL(err, RP_ERR_NOMEM, "matrix: out of memory");
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_doc = 0;
    rp_status st = RP_OK;
    if (!yaml_parser_initialize(&parser)) {
        free(sp);
        return RP_FAIL(err, RP_ERR_NOMEM, "matrix: out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    st = prescan(&x, text, len);
    if (st == RP_OK && !yaml_parser_load(&parser, &doc)) st = yaml_fail(&x, &parser);
    else if (st == RP_OK) have_doc = 1;
    const yaml_node_t *root = have_doc ? yaml_document_get_root_node(&doc) : NULL;
    if (st == RP_OK && !root) st = RP_FAIL(err, RP_ERR_INVALID, "%s:1:1: empty matrix file", origin);
    if (st == RP_OK) { /* a second document would be silently ignored: refuse it */
        yaml_document_t more;
        if (!yaml_parser_load(&parser, &more)) st = yaml_fail(&x, &parser);
        else {
            const yaml_node_t *r2 = yaml_document_get_root_node(&more);
            if (r2) st = FAIL_AT(&x, r2, "a second YAML document; a matrix file holds one");
            yaml_document_delete(&more);
        }
    }
    x.doc = &doc;
    if (st == RP_OK) st = schema_init(&x);
    if (st == RP_OK) st = read_root(&x, root, sp, m);
    if (st == RP_OK && !m->name[0]) {
        name_from_path(origin, m->name, sizeof m->name);
        if (!safe_name(m->name))
            st = RP_FAIL(err, RP_ERR_INVALID, "%s:1:1: the file name \"%s\" cannot name a results directory; set "
                         "'name:'", origin, m->name);
    }
    if (st == RP_OK) st = expand(&x, sp, m);
    spec_free(sp);
    free(sp);
    cJSON_Delete(x.defaults);
    if (have_doc) yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (st != RP_OK) {
        free(m->cases);
        m->cases = NULL;
        m->n_cases = 0;
    }
    return st;
}

rp_status rp_matrix_load(const char *path, rp_matrix *m, rp_error *err) {
    assert(path && m);
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb = {0};
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) { /* a directory opens, then reads EISDIR */
        fclose(f);
        return RP_FAIL(err, RP_ERR_INVALID, "%s:1:1: not a matrix file (%s)", path,
                       S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        if (cap >= (64u << 20)) { /* a matrix is a few KiB */
            free(buf);
            fclose(f);
            return RP_FAIL(err, RP_ERR_INVALID, "%s:1:1: larger than 64 MiB; not a matrix file", path);
        }
        char *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    const int rd = ferror(f);
    fclose(f);
    if (!buf) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    if (rd) {
        free(buf);
        return RP_FAIL(err, RP_ERR_IO, "%s: read error", path);
    }
    rp_status st = rp_matrix_parse(buf, len, path, m, err);
    free(buf);
    return st;
}

void rp_matrix_free(rp_matrix *m) {
    if (!m) return;
    free(m->cases);
    m->cases = NULL;
    m->n_cases = 0;
}

rp_status rp_matrix_select(const rp_matrix *m, const char *const *filters, int n, unsigned char *keep,
                           rp_error *err) {
    assert(m && keep);
    pctx x = {.origin = "--filter", .err = err};
    RP_TRY(schema_init(&x));
    rp_status st = RP_OK;
    /* check the filters first */
    for (int i = 0; i < n && st == RP_OK; i++) {
        const char *eq = strchr(filters[i], '=');
        if (!eq || eq == filters[i]) {
            st = RP_FAIL(err, RP_ERR_INVALID, "--filter '%s': expected KEY=VALUE, e.g. dp=2", filters[i]);
            break;
        }
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(eq - filters[i]), filters[i]);
        if (!strcmp(key, "id") || !strcmp(key, "name") || field_find(&x, key)) continue;
        const char *known[MAX_FIELDS + 1];
        int nk = 0;
        for (int f = 0; f < x.n_fields; f++) known[nk++] = x.fields[f].key;
        known[nk++] = "id";
        const char *near = nearest(key, known, nk);
        st = near ? RP_FAIL(err, RP_ERR_INVALID, "--filter '%s': unknown key '%s' (did you mean '%s'?)", filters[i],
                            key, near)
                  : RP_FAIL(err, RP_ERR_INVALID, "--filter '%s': unknown key '%s' (a case field, id or name)",
                            filters[i], key);
    }
    for (int c = 0; st == RP_OK && c < m->n_cases; c++) {
        cJSON *j = rp_case_to_json(&m->cases[c].c);
        if (!j) {
            st = RP_FAIL(err, RP_ERR_NOMEM, "matrix: out of memory");
            break;
        }
        /* filters on the same key are alternatives; different keys must all match */
        int ok = 1;
        for (int i = 0; ok && i < n; i++) {
            const char *eq = strchr(filters[i], '=');
            const size_t kl = (size_t)(eq - filters[i]);
            int any = 0;
            for (int k = 0; k < n && !any; k++) {
                if (strncmp(filters[k], filters[i], kl + 1)) continue; /* same "key=" prefix */
                const char *want = filters[k] + kl + 1;
                if (kl == 2 && !strncmp(filters[k], "id", 2)) any = !strncmp(m->cases[c].id, want, strlen(want));
                else if (kl == 4 && !strncmp(filters[k], "name", 4)) any = !strcmp(m->cases[c].c.name, want);
                else {
                    char key[64], have[300];
                    snprintf(key, sizeof key, "%.*s", (int)kl, filters[k]);
                    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
                    if (cJSON_IsNumber(v)) {
                        char *end;
                        double d = strtod(want, &end);
                        any = *want && !*end && d == v->valuedouble;
                    } else {
                        value_text(v, have, sizeof have);
                        any = !strcmp(have, want);
                    }
                }
            }
            ok = any;
        }
        keep[c] = (unsigned char)ok;
        cJSON_Delete(j);
    }
    for (int c = 0; st == RP_OK && c < m->n_cases; c++)
        if (keep[c]) keep[m->cases[c].ref] = 1;
    cJSON_Delete(x.defaults);
    return st;
}

void rp_matrix_help(FILE *f) {
    char degrees[160];
    rp_par_fields_text(" ", degrees, sizeof degrees);
    fprintf(f,
"Matrix files (repro --matrix FILE): one YAML mapping with these keys (all optional):\n"
"\n"
"  name: smoke            results go to results/<name>/ (default: the file name without .yaml)\n"
"  description: text\n"
"  base: {FIELD: value}   the base case: every case starts from the defaults, then base\n"
"  seeds: [0, 1]          the item seeds (default [0]); each case runs all items as one batch\n"
"  prompts: [\"a\", \"b\"]    SD3/FLUX prompts, and/or\n"
"  classes: [207, 360]    DiT class labels; items = for each prompt (class), each seed;\n"
"                         with both, DiT cases take the classes and SD3/FLUX the prompts;\n"
"                         a case field items: N keeps the first N items (e.g. a smaller batch)\n"
"  axes:                  swept as a cartesian product, first axis outermost\n"
"    dp: [1, 2]           FIELD: [values]\n"
"    attention: [math, flash]\n"
"    resolution: [128, [256, 128]]   width = height, or [width, height]\n"
"    layout: [{dp: 2}, {ulysses: 2}] a group axis: any other name, values are mappings\n"
"  exclude: [{dp: 2, attention: math}]   drops combinations matching all the given values\n"
"  include: [{dp: 2, attention: flash, backend: self}]\n"
"                         GitHub Actions rules: added to every combination whose axis values\n"
"                         it does not change; a new combination when it fits none; without\n"
"                         axes each entry is a case\n"
"  reference: {dp: 1, attention: math}\n"
"                         a case's reference = the case with these values; default: the serial\n"
"                         run (all degrees 1, num_pipeline_patch 0, pipefusion_layers [],\n"
"                         warmup_steps 1, backend self, no inject). Cases with the same\n"
"                         reference form a group; the reference runs first. A reference\n"
"                         must be exact (pipefusion 1, patch 1)\n"
"  repeat: 3              runs of each case (run-to-run determinism), 1..%d\n"
"  timeout: 600           seconds per run of a case, all its ranks (default 900)\n"
"  launcher: srun         how a case's ranks start: local (default: fork on this machine),\n"
"                         srun (a Slurm step inside the sweep's allocation), mpirun (Open MPI,\n"
"                         with --hostfile); --launcher overrides it\n"
"  ranks_per_node: 2      srun / mpirun: a case of world W takes ceil(W / 2) nodes (default:\n"
"                         min(W, the nodes there are)); --ranks-per-node overrides it\n"
"  tolerances:            against the reference; a case outside one is OUTSIDE TOLERANCE\n"
"                         (exit 1 unless it expects another label)\n"
"    latents_max_abs: 1e-5   latents_rel_l2: 1e-6   psnr_min: 40   ssim_min: 0.99\n"
"    changed_max: 0.01    (share of pixels)\n"
"  expect: [{ulysses: 3, label: CONFIG_ERROR}]\n"
"                         the expected outcome of matching cases (or 'expect: LABEL' in a\n"
"                         base/include entry); statuses: ok CONFIG_ERROR CRASH HANG SKIPPED;\n"
"                         verdicts (the classifier): identical drift approx BUG MISMATCH\n"
"                         NONDETERMINISTIC\n"
"  classify:              the classifier (docs/classification.md); 'classify: false' turns it off\n"
"    twins: 3             rounding twins per reference (3..6): reduce-split, threads, noise-ulp, ..\n"
"    factor: 64           a layer or step beyond factor x the rounding envelope is a BUG\n"
"    approx_ssim: 0.90    approximate strategies after warmup: final SSIM at least\n"
"    approx_psnr: 25      and PSNR (dB) at least\n"
"    teacher_steps: 0     teacher-forced steps: 0 every step, N spread over the run\n"
"    leak_check: true     recompute each case's first steps after its run in the same worker\n"
"    invariant_shadow: true  each exact CPU layout also teacher-forced under invariant numerics,\n"
"                         where it must be bitwise its reference's (any difference is a BUG)\n"
"\n"
"Case fields (as in case.json; a value of the wrong type, an unknown key or an impossible\n"
"value is an error FILE:LINE:COLUMN before anything runs):\n"
"  model dit-tiny | dit-xl-2-128 | dit-xl-2-256 | dit-xl-2-512 | sd3-tiny | sd3-medium | sd3.5-large |\n"
"        sd3.5-medium | sd3.5-medium-tiny | flux-tiny | flux-dev | flux-schnell | flux-tiny-schnell\n"
"  depth single_depth weights weight_seed vae width height vae_scale_factor\n"
"  prompt_embeds (SD3/FLUX: a safetensors file of precomputed conditioning, item i = row i,\n"
"        instead of the text encoder on the prompts; README \"Running your own checkpoints\")\n"
"  sharpen (0..64; 0, 1 off: attention q/k/v weights x sharpen, the sensitivity of sharp\n"
"        attention; the classifier is calibrated on it)\n"
"  steps sampler eta cfg guidance\n"
"  precision (fp32 bf16 tf32 fp16)  attention (math split subquad flash auto)\n"
"  attn_q_chunk attn_kv_chunk device_profile threads blas_core reduce_split\n"
"  mode (deterministic fast: with fast, repeats that differ are reported, not failed)\n"
"  numerics (default invariant: invariant = layout-invariant kernels, every exact layout\n"
"    bitwise the serial run; a difference is then a BUG; docs/invariant.md)\n"
"  backend (self gloo nccl)  device (cpu | cuda | cuda:<name substring>, e.g. cuda:H200 |\n"
"    cuda:#<ordinal>)  gpu_mode (deterministic fast: the CUDA GEMMs; fast needs a cuda device)\n"
"  precision on cuda: fp32 tf32 bf16 fp16 (the GEMMs'; the text encoder runs on the CPU in\n"
"    fp32, or bf16 for bf16)\n"
"  %s num_pipeline_patch pipefusion_layers\n"
"  warmup_steps batch_forward (joint per-item)\n"
"  inject (testing only, a fault to plant):\n"
"    %s\n"
"  name (a label; default: the swept values) expect (an expected label)\n"
"\n"
"Cases whose device is absent here (cuda, cuda:<name>), whose backend is not built, or whose\n"
"blas_core this CPU cannot run (e.g. SkylakeX without AVX-512) are SKIPPED with the reason;\n"
"cases that break a rule below are CONFIG_ERROR, without running.\n"
"Neither is a file error.\n",
            RP_MATRIX_MAX_REPEAT, degrees, rp_inject_names());
}
