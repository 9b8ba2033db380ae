/* case.c — the case record: defaults, normalised JSON, strict parsing, id, files.
 *
 * One table (case_fields) lists every scalar field with its JSON key, type and
 * offset, in the fixed order of the normalised JSON; its degrees row stands for one
 * int field per parallel strategy with a degree, from the strategy table (strategy.h),
 * so a strategy added there is a case field too. Writer, reader and the did-you-mean
 * suggestions all walk the expanded table (case_fields_expand), so a field added to
 * rp_case and to the table is serialised, parsed and hashed with no other change.
 *
 * 64-bit seeds: JSON numbers are doubles here (cJSON), exact only up to 2^53.
 * Seeds up to 2^53 are written as numbers; larger ones as decimal strings, and
 * the reader accepts both forms for a u64 field, so every seed round-trips.
 *
 * Id: FNV-1a 64 over cJSON_PrintUnformatted(normalised JSON without "expect" and
 * "name", and without the fields of id_optional[] while they hold their default:
 * fields added after ids were first stored, so existing ids stay valid; likewise the
 * degree of a strategy marked id_optional in strategy.h's table while it is 1) followed
 * by "\nrepro " REPRO_VERSION. FNV-1a is chosen because it is stable across
 * platforms and builds, needs no library, and 64 bits make a
 * collision within one sweep (hundreds of cases) negligible; it is not meant to
 * resist deliberate collisions. cJSON prints doubles with the shortest of
 * %1.15g / %1.17g that round-trips, so the text, hence the id, is a function of
 * the values alone. */
#include "case.h"
#include "engine/pipeline/pipeline.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/fsutil.h"

#ifndef REPRO_VERSION
#define REPRO_VERSION "0"
#endif

typedef enum field_type { F_STR, F_INT, F_U64, F_DOUBLE, F_LAYERS, F_DEGREES } field_type;

typedef struct case_field {
    const char *key;
    field_type type;
    size_t offset;
    size_t size;   /* F_STR: buffer size (max length + 1) */
} case_field;

#define FS(k, m) { k, F_STR, offsetof(rp_case, m), sizeof(((rp_case *)0)->m) }
#define FI(k, m) { k, F_INT, offsetof(rp_case, m), 0 }
#define FU(k, m) { k, F_U64, offsetof(rp_case, m), 0 }
#define FD(k, m) { k, F_DOUBLE, offsetof(rp_case, m), 0 }
/* the one list field: pipefusion_layers with its count n_pipefusion_layers */
#define FL(k) { k, F_LAYERS, offsetof(rp_case, pipefusion_layers), 0 }
/* the degrees: expanded into one F_INT per strategy degree, in the strategy table's order */
#define FDEG { "", F_DEGREES, offsetof(rp_case, deg), 0 }

/* Fixed order of the normalised JSON. "items" follows "inject"; "expect" and
 * "name" (labels, outside the id) come last. */
static const case_field case_fields[] = {
    FS("model", model), FI("depth", depth), FI("single_depth", single_depth),
    FS("weights", weights), FS("prompt_embeds", prompt_embeds), FU("weight_seed", weight_seed), FI("sharpen", sharpen), FS("vae", vae),
    FI("width", width), FI("height", height), FI("vae_scale_factor", vae_scale_factor),
    FI("steps", steps), FS("sampler", sampler), FD("eta", eta), FD("cfg", cfg),
    FD("guidance", guidance),
    FS("precision", precision), FS("attention", attention), FI("attn_q_chunk", attn_q_chunk),
    FI("attn_kv_chunk", attn_kv_chunk), FS("device_profile", device_profile),
    FI("threads", threads), FS("blas_core", blas_core), FI("reduce_split", reduce_split),
    FS("mode", mode), FS("numerics", numerics),
    FS("backend", backend), FS("device", device), FS("gpu_mode", gpu_mode),
    FDEG, FI("num_pipeline_patch", num_pipeline_patch),
    FL("pipefusion_layers"),
    FI("warmup_steps", warmup_steps), FS("batch_forward", batch_forward),
    FS("inject", inject),
};
#define N_CASE_FIELDS (sizeof case_fields / sizeof case_fields[0] - 1 + RP_PAR_N_DEGREES)

/* The named view of the degrees is deg's members (case.h's union). */
_Static_assert(offsetof(rp_case, ulysses) == offsetof(rp_case, deg) + offsetof(rp_par_degrees, ulysses) &&
                   offsetof(rp_case, patch) == offsetof(rp_case, deg) + offsetof(rp_par_degrees, patch),
               "rp_case's degree names must be rp_par_degrees' members in order");

/* case_fields with the degrees row expanded (N_CASE_FIELDS rows) into out. */
static void case_fields_expand(case_field out[N_CASE_FIELDS]) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof case_fields / sizeof case_fields[0]; i++) {
        if (case_fields[i].type != F_DEGREES) { out[n++] = case_fields[i]; continue; }
        for (int k = 0; k < RP_PAR_N_DEGREES; k++) {
            const rp_par_strategy_info *s = rp_par_degree_strategy(k);
            out[n++] = (case_field){s->field, F_INT, case_fields[i].offset + s->degree, 0};
        }
    }
    assert(n == N_CASE_FIELDS);
}

static const char *const item_keys[] = {"seed", "class", "prompt"};
#define N_ITEM_KEYS 3

/* Seeds above this are not exact as JSON (double) numbers. */
#define JSON_EXACT_MAX 9007199254740992.0 /* 2^53 */

static void set_str(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src);
}

void rp_case_defaults(rp_case *c) {
    assert(c);
    memset(c, 0, sizeof *c);
    set_str(c->model, sizeof c->model, "dit-tiny");
    c->steps = 10;
    set_str(c->sampler, sizeof c->sampler, "ddim");
    c->cfg = 4.0;
    /* guidance stays 0: the engine refuses a nonzero one for DiT/SD3, so FLUX
     * cases set it explicitly (FluxPipeline's default is 3.5) */
    set_str(c->precision, sizeof c->precision, "fp32");
    set_str(c->attention, sizeof c->attention, "math");
    set_str(c->mode, sizeof c->mode, "deterministic");
    set_str(c->numerics, sizeof c->numerics, "default");
    set_str(c->backend, sizeof c->backend, "self");
    set_str(c->device, sizeof c->device, "cpu");
    set_str(c->gpu_mode, sizeof c->gpu_mode, "deterministic");
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) *rp_par_degree_ptr(&c->deg, rp_par_degree_strategy(i)) = 1;
    c->warmup_steps = 1;
    set_str(c->batch_forward, sizeof c->batch_forward, "joint");
    c->n_items = 1;
    c->items[0].seed = 0;
    c->items[0].class_id = 0;
}

void rp_case_gen_request(const rp_case *c, rp_gen_request *req) {
    assert(c && req);
    memset(req, 0, sizeof *req);
    req->model = c->model;
    req->depth = c->depth;
    req->single_depth = c->single_depth;
    req->weights = c->weights[0] ? c->weights : NULL;
    req->weight_seed = c->weight_seed;
    req->sharpen = c->sharpen;
    req->vae = c->vae[0] ? c->vae : NULL;
    req->prompt_embeds = c->prompt_embeds[0] ? c->prompt_embeds : NULL;
    req->eta = c->eta;
    req->steps = c->steps;
    req->cfg = c->cfg;
    req->guidance = c->guidance;
    req->width = c->width;
    req->height = c->height;
    req->per_item = !strcmp(c->batch_forward, "per-item");
}

void rp_case_degrees(const rp_case *c, rp_par_degrees *d) {
    assert(c && d);
    *d = c->deg;
}

int rp_case_world(const rp_case *c) {
    /* patch parallel replaces the sequence split; the header documents both
     * layouts, and a case mixing them is rejected by validation, so the product
     * of every degree is the world of either layout. */
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    return rp_par_world(&d);
}

int rp_case_pipeline_patches(const rp_case *c) {
    if (c->pipefusion > 1) return c->num_pipeline_patch ? c->num_pipeline_patch : c->pipefusion;
    return c->num_pipeline_patch >= 2 ? c->num_pipeline_patch : 0;
}

rp_par_exactness rp_case_exactness(const rp_case *c) {
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    return rp_case_pipeline_patches(c) ? RP_PAR_WARMUP_EXACT : rp_par_layout_exactness(&d);
}

void rp_case_degrees_text(const rp_case *c, char *buf, size_t cap) {
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    rp_par_tags_text(&d, buf, cap);
    if (c->pipefusion == 1 && rp_case_pipeline_patches(c)) { /* the serial emulation: one stage, M patches */
        if (cap && !strcmp(buf, "1")) buf[0] = '\0';
        rp_appendf(buf, cap, "%spf1/M%d", buf[0] ? " " : "", c->num_pipeline_patch);
    }
}

static cJSON *u64_json(uint64_t v) {
    if (v <= (UINT64_C(1) << 53)) return cJSON_CreateNumber((double)v);
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return cJSON_CreateString(buf);
}

cJSON *rp_case_to_json(const rp_case *c) {
    assert(c);
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    case_field fields[N_CASE_FIELDS];
    case_fields_expand(fields);
    for (size_t i = 0; i < N_CASE_FIELDS; i++) {
        const case_field *f = &fields[i];
        const char *p = (const char *)c + f->offset;
        cJSON *v = NULL;
        switch (f->type) {
        case F_STR: v = cJSON_CreateString(p); break;
        case F_INT: v = cJSON_CreateNumber(*(const int *)p); break;
        case F_U64: v = u64_json(*(const uint64_t *)p); break;
        case F_DOUBLE: v = cJSON_CreateNumber(*(const double *)p); break;
        case F_LAYERS:
            assert(c->n_pipefusion_layers >= 0 && c->n_pipefusion_layers <= RP_CASE_MAX_STAGES);
            v = cJSON_CreateIntArray(c->pipefusion_layers, c->n_pipefusion_layers);
            break;
        case F_DEGREES: break; /* expanded */
        }
        if (!v) { cJSON_Delete(j); return NULL; }
        cJSON_AddItemToObject(j, f->key, v);
    }
    cJSON *items = cJSON_AddArrayToObject(j, "items");
    if (!items) { cJSON_Delete(j); return NULL; }
    assert(c->n_items >= 0 && c->n_items <= RP_CASE_MAX_ITEMS);
    for (int i = 0; i < c->n_items; i++) {
        cJSON *it = cJSON_CreateObject();
        if (!it) { cJSON_Delete(j); return NULL; }
        cJSON_AddItemToArray(items, it);
        cJSON_AddItemToObject(it, "seed", u64_json(c->items[i].seed));
        cJSON_AddNumberToObject(it, "class", c->items[i].class_id);
        cJSON_AddStringToObject(it, "prompt", c->items[i].prompt);
    }
    cJSON_AddStringToObject(j, "expect", c->expect);
    cJSON_AddStringToObject(j, "name", c->name);
    return j;
}

/* ---- strict reading ------------------------------------------------------------ */

void rp_case_display_name(const char *name, size_t width, char *out, size_t cap) {
    assert(name && out && cap > 0);
    size_t n = 0;
    for (; name[n] && n + 1 < cap; n++) {
        const unsigned char ch = (unsigned char)name[n];
        out[n] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    out[n] = '\0';
    if (width >= 4 && width < cap && n > width) memcpy(out + width - 3, "...", 4);
}

/* Fails naming an unknown key with the nearest known one when it is close
 * (distance <= max(2, len/3): typos, not different words), else the list. */
static rp_status unknown_key(const char *origin, const char *where, const char *key,
                             const char *const *known, size_t n_known, rp_error *err) {
    const char *best = NULL;
    int best_d = INT_MAX;
    for (size_t i = 0; i < n_known; i++) {
        int d = rp_edit_distance(key, known[i]);
        if (d < best_d) { best_d = d; best = known[i]; }
    }
    int limit = (int)strlen(key) / 3;
    if (limit < 2) limit = 2;
    if (best && best_d <= limit)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: unknown field '%s'%s (did you mean '%s'?)", origin, key,
                       where, best);
    char list[768] = "";
    size_t len = 0;
    for (size_t i = 0; i < n_known && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? " " : "", known[i]);
    return RP_FAIL(err, RP_ERR_INVALID, "%s: unknown field '%s'%s; known fields: %s", origin, key, where,
                   list);
}

static const char *json_type_name(const cJSON *v) {
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    return "invalid value";
}

static rp_status wrong_type(const char *origin, const char *key, const char *expected, const cJSON *v,
                            rp_error *err) {
    if (cJSON_IsNumber(v))
        return RP_FAIL(err, RP_ERR_INVALID, "%s: field '%s': expected %s, got number %.17g", origin, key,
                       expected, v->valuedouble);
    return RP_FAIL(err, RP_ERR_INVALID, "%s: field '%s': expected %s, got %s", origin, key, expected,
                   json_type_name(v));
}

static rp_status read_int(const char *origin, const char *key, const cJSON *v, int *out, rp_error *err) {
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < INT_MIN ||
        v->valuedouble > INT_MAX)
        return wrong_type(origin, key, "an integer", v, err);
    *out = (int)v->valuedouble;
    return RP_OK;
}

static rp_status read_u64(const char *origin, const char *key, const cJSON *v, uint64_t *out,
                          rp_error *err) {
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d != floor(d) || d < 0 || d > JSON_EXACT_MAX)
            return wrong_type(origin, key, "an unsigned integer (above 2^53 as a decimal string)", v, err);
        *out = (uint64_t)d;
        return RP_OK;
    }
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        char *end = NULL;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno == ERANGE)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "%s: field '%s': expected an unsigned 64-bit integer, got string \"%s\"", origin,
                           key, s);
        *out = (uint64_t)x;
        return RP_OK;
    }
    return wrong_type(origin, key, "an unsigned integer", v, err);
}

static rp_status read_str(const char *origin, const char *key, const cJSON *v, char *dst, size_t size,
                          rp_error *err) {
    if (!cJSON_IsString(v)) return wrong_type(origin, key, "a string", v, err);
    if (strlen(v->valuestring) >= size)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: field '%s': string longer than %zu characters", origin, key,
                       size - 1);
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return RP_OK;
}

/* Fails when obj has the key of v a second time (cJSON keeps duplicates; a
 * silent "last wins" would hide a typo'd matrix). */
static rp_status check_duplicate(const char *origin, const cJSON *obj, const cJSON *v, rp_error *err) {
    for (const cJSON *o = obj->child; o && o != v; o = o->next)
        if (o->string && strcmp(o->string, v->string) == 0)
            return RP_FAIL(err, RP_ERR_INVALID, "%s: field '%s' given twice", origin, v->string);
    return RP_OK;
}

static rp_status read_item(const char *origin, int idx, const cJSON *o, rp_case_item *it, rp_error *err) {
    char key[64];
    snprintf(key, sizeof key, "items[%d]", idx);
    if (!cJSON_IsObject(o)) return wrong_type(origin, key, "an object {seed, class, prompt}", o, err);
    memset(it, 0, sizeof *it);   /* missing: seed 0, class 0, prompt "" as the default item */
    for (const cJSON *v = o->child; v; v = v->next) {
        RP_TRY(check_duplicate(origin, o, v, err));
        snprintf(key, sizeof key, "items[%d].%s", idx, v->string);
        if (strcmp(v->string, "seed") == 0) {
            RP_TRY(read_u64(origin, key, v, &it->seed, err));
        } else if (strcmp(v->string, "class") == 0) {
            RP_TRY(read_int(origin, key, v, &it->class_id, err));
        } else if (strcmp(v->string, "prompt") == 0) {
            RP_TRY(read_str(origin, key, v, it->prompt, sizeof it->prompt, err));
        } else {
            char where[32];
            snprintf(where, sizeof where, " in items[%d]", idx);
            return unknown_key(origin, where, v->string, item_keys, N_ITEM_KEYS, err);
        }
    }
    return RP_OK;
}

static rp_status read_items(const char *origin, const cJSON *v, rp_case *c, rp_error *err) {
    if (!cJSON_IsArray(v)) return wrong_type(origin, "items", "an array of {seed, class, prompt}", v, err);
    int n = cJSON_GetArraySize(v);
    if (n > RP_CASE_MAX_ITEMS)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: field 'items': %d items, at most %d", origin, n,
                       RP_CASE_MAX_ITEMS);
    int i = 0;
    for (const cJSON *o = v->child; o; o = o->next, i++) RP_TRY(read_item(origin, i, o, &c->items[i], err));
    c->n_items = n;
    return RP_OK;
}

static rp_status read_layers(const char *origin, const char *key, const cJSON *v, rp_case *c, rp_error *err) {
    if (!cJSON_IsArray(v)) return wrong_type(origin, key, "an array of integers", v, err);
    int n = cJSON_GetArraySize(v);
    if (n > RP_CASE_MAX_STAGES)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: field '%s': %d stages, at most %d", origin, key, n,
                       RP_CASE_MAX_STAGES);
    int i = 0;
    for (const cJSON *o = v->child; o; o = o->next, i++) {
        char k[64];
        snprintf(k, sizeof k, "%s[%d]", key, i);
        RP_TRY(read_int(origin, k, o, &c->pipefusion_layers[i], err));
    }
    c->n_pipefusion_layers = n;
    return RP_OK;
}

rp_status rp_case_from_json(const cJSON *j, const char *origin, rp_case *c, rp_error *err) {
    assert(c);
    if (!origin) origin = "case";
    if (!cJSON_IsObject(j)) return RP_FAIL(err, RP_ERR_INVALID, "%s: expected a JSON object", origin);
    rp_case tmp;
    rp_case_defaults(&tmp);
    case_field fields[N_CASE_FIELDS];
    case_fields_expand(fields);
    const char *known[N_CASE_FIELDS + 3];
    for (size_t i = 0; i < N_CASE_FIELDS; i++) known[i] = fields[i].key;
    known[N_CASE_FIELDS] = "items";
    known[N_CASE_FIELDS + 1] = "expect";
    known[N_CASE_FIELDS + 2] = "name";
    for (const cJSON *v = j->child; v; v = v->next) {
        RP_TRY(check_duplicate(origin, j, v, err));
        const char *k = v->string;
        if (strcmp(k, "items") == 0) { RP_TRY(read_items(origin, v, &tmp, err)); continue; }
        if (strcmp(k, "expect") == 0) {
            RP_TRY(read_str(origin, k, v, tmp.expect, sizeof tmp.expect, err));
            continue;
        }
        if (strcmp(k, "name") == 0) { RP_TRY(read_str(origin, k, v, tmp.name, sizeof tmp.name, err)); continue; }
        const case_field *f = NULL;
        for (size_t i = 0; i < N_CASE_FIELDS; i++)
            if (strcmp(fields[i].key, k) == 0) { f = &fields[i]; break; }
        if (!f) return unknown_key(origin, "", k, known, N_CASE_FIELDS + 3, err);
        char *p = (char *)&tmp + f->offset;
        switch (f->type) {
        case F_STR: RP_TRY(read_str(origin, k, v, p, f->size, err)); break;
        case F_INT: RP_TRY(read_int(origin, k, v, (int *)p, err)); break;
        case F_U64: RP_TRY(read_u64(origin, k, v, (uint64_t *)p, err)); break;
        case F_DOUBLE:
            if (!cJSON_IsNumber(v)) return wrong_type(origin, k, "a number", v, err);
            *(double *)p = v->valuedouble;
            break;
        case F_LAYERS: RP_TRY(read_layers(origin, k, v, &tmp, err)); break;
        case F_DEGREES: break; /* expanded */
        }
    }
    *c = tmp;   /* all or nothing: c is untouched on error */
    return RP_OK;
}

/* ---- id ---------------------------------------------------------------------------- */

static uint64_t fnv1a64(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Fields hashed only when they differ from their default (see the top of the file). */
static const struct { const char *key, *dflt; } id_optional[] = {
    {"gpu_mode", "deterministic"}, {"prompt_embeds", ""}, {"sharpen", "0"}, {"numerics", "default"}};

/* The text the id hashes (see the top of the file): malloc'd. Aborts when out of memory:
 * an id that silently hashed nothing would merge unrelated cases, and running out of memory
 * for a few KiB of text is not something to carry on from. */
static char *id_text(const rp_case *c) {
    cJSON *j = rp_case_to_json(c);
    char *text = NULL;
    if (j) {
        cJSON_DeleteItemFromObject(j, "expect");
        cJSON_DeleteItemFromObject(j, "name");
        for (size_t i = 0; i < sizeof id_optional / sizeof id_optional[0]; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, id_optional[i].key);
            if ((cJSON_IsString(v) && !strcmp(v->valuestring, id_optional[i].dflt)) ||
                (cJSON_IsNumber(v) && v->valuedouble == atof(id_optional[i].dflt)))
                cJSON_DeleteItemFromObject(j, id_optional[i].key);
        }
        for (int i = 0; i < RP_PAR_N_DEGREES; i++) { /* likewise a strategy's degree */
            const rp_par_strategy_info *s = rp_par_degree_strategy(i);
            if (s->id_optional && rp_par_degree(&c->deg, s) == 1) cJSON_DeleteItemFromObject(j, s->field);
        }
        text = cJSON_PrintUnformatted(j);
    }
    cJSON_Delete(j);
    if (!text) abort();
    return text;
}

void rp_case_id(const rp_case *c, char *out) {
    assert(c && out);
    char *text = id_text(c);
    uint64_t h = fnv1a64(0xcbf29ce484222325ULL, text);
    h = fnv1a64(h, "\nrepro " REPRO_VERSION);
    free(text);
    snprintf(out, 17, "%016" PRIx64, h);
}

int rp_case_same(const rp_case *a, const rp_case *b) {
    assert(a && b);
    char *ta = id_text(a), *tb = id_text(b);
    const int same = !strcmp(ta, tb);
    free(ta);
    free(tb);
    return same;
}

/* The fields that say how a case is run, not what it computes: its layout (every degree,
 * from the strategy table, and the pipeline's knobs), where and with which kernels
 * (backend, device, its modes, the attention variant and its chunks, threads, the OpenBLAS
 * kernel set, the split reduction, the numerics, one forward per item or per batch), the
 * fault it injects, and its labels. Every other field, the precision included, poses the
 * problem, so a field added to the table later is held by default. */
static const char *const how_fields[] = {
    "attention", "attn_q_chunk", "attn_kv_chunk", "device_profile", "threads", "blas_core", "reduce_split",
    "mode", "numerics", "backend", "device", "gpu_mode", "num_pipeline_patch", "pipefusion_layers",
    "warmup_steps", "batch_forward", "inject", "expect", "name"};

static int is_how_field(const char *key) {
    for (size_t i = 0; i < sizeof how_fields / sizeof how_fields[0]; i++)
        if (!strcmp(key, how_fields[i])) return 1;
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        if (!strcmp(key, rp_par_degree_strategy(i)->field)) return 1;
    return 0;
}

int rp_case_problem_diff(const rp_case *a, const rp_case *b, char *what, size_t cap) {
    assert(a && b && what && cap > 0);
    what[0] = '\0';
    cJSON *ja = rp_case_to_json(a), *jb = rp_case_to_json(b);
    if (!ja || !jb) abort(); /* as id_text: a check that silently compared nothing would pass */
    int differs = 0;
    for (const cJSON *va = ja->child; va && !differs; va = va->next) {
        if (is_how_field(va->string)) continue;
        const cJSON *vb = cJSON_GetObjectItemCaseSensitive(jb, va->string);
        if (vb && cJSON_Compare(va, vb, 1)) continue;
        differs = 1;
        char *ta = cJSON_PrintUnformatted(va), *tb = vb ? cJSON_PrintUnformatted(vb) : NULL;
        snprintf(what, cap, "field '%s': %.120s against %.120s", va->string, ta ? ta : "?", tb ? tb : "(absent)");
        free(ta);
        free(tb);
    }
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return differs;
}

/* ---- files ------------------------------------------------------------------------- */

rp_status rp_case_save(const rp_case *c, const char *path, rp_error *err) {
    assert(c && path);
    cJSON *j = rp_case_to_json(c);
    char *text = j ? cJSON_Print(j) : NULL;
    cJSON_Delete(j);
    if (!text) return RP_FAIL(err, RP_ERR_NOMEM, "%s: JSON printing failed", path);
    rp_status st = rp_write_text_atomic(path, text, err);
    free(text);
    return st;
}

rp_status rp_case_load(const char *path, rp_case *c, rp_error *err) {
    assert(path && c);
    FILE *f = fopen(path, "rb");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (len + 1 < cap) break;
        if (cap > (64u << 20)) { free(buf); buf = NULL; break; }   /* a case is a few KiB */
        char *nb = realloc(buf, cap * 2);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    int rd_err = ferror(f);
    fclose(f);
    if (!buf) return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot read (too large or out of memory)", path);
    if (rd_err) { free(buf); return RP_FAIL(err, RP_ERR_IO, "%s: read error", path); }
    buf[len] = '\0';
    cJSON *j = cJSON_ParseWithLength(buf, len);
    if (!j) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= buf && at <= buf + len ? (long)(at - buf) : -1;
        free(buf);
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: not valid JSON (near byte %ld)", path, off);
    }
    free(buf);
    rp_status s = rp_case_from_json(j, path, c, err);
    cJSON_Delete(j);
    return s;
}
