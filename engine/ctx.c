/* ctx.c — engine options: defaults, names, device profiles for attention
 * "auto", the OpenBLAS kernel-set re-exec, and the trace notes of every knob.
 *
 * Nothing here keeps hidden state: a profile is a value in the ctx, the
 * OpenBLAS core is the library's (read back, never cached), and the only
 * process-wide effects are the ones OpenBLAS itself keeps globally (threads,
 * and the core chosen when the library loaded). */
#include "ctx.h"

#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "error.h"
#include "trace.h"

rp_ctx rp_ctx_default(void) {
    rp_ctx c = {0};
    c.precision = RP_PREC_FP32;
    c.reduce_split = 0;
    c.numerics = RP_NUMERICS_DEFAULT;
    c.threads = 0;
    c.blas_core[0] = '\0';
    c.attn.kind = RP_ATTN_MATH;
    c.device.name[0] = '\0'; /* unset: see rp_device_profile */
    c.trace = NULL;
    return c;
}

void rp_ctx_apply(const rp_ctx *ctx) {
    /* OpenBLAS keeps one thread count for the whole process. threads 0 (the library's own
     * choice) is the count it started with, restored explicitly: a run that set another
     * (the classifier's threads twin, made in the case's own process) must not leave it
     * to the runs after it, whose bits may depend on it */
    static int initial = 0;
    if (!initial) initial = openblas_get_num_threads();
    openblas_set_num_threads(ctx->threads > 0 ? ctx->threads : initial);
}

rp_status rp_precision_for_host(const char *name, int gpu, rp_precision *out, rp_error *err) {
    if (!strcmp(name, "fp32")) *out = RP_PREC_FP32;
    else if (!strcmp(name, "bf16")) *out = RP_PREC_BF16;
    else if (gpu && (!strcmp(name, "tf32") || !strcmp(name, "fp16"))) *out = RP_PREC_FP32;
    else
        return RP_FAIL(err, RP_ERR_INVALID, "precision '%s': not fp32 or bf16%s", name,
                       gpu ? ", tf32 or fp16" : " (tf32 and fp16 need a CUDA device)");
    return RP_OK;
}

const char *rp_precision_name(rp_precision p) {
    switch (p) {
    case RP_PREC_FP32: return "fp32";
    case RP_PREC_BF16: return "bf16";
    }
    return "unknown";
}

const char *rp_numerics_name(rp_numerics n) {
    return n == RP_NUMERICS_INVARIANT ? "invariant" : "default";
}

rp_status rp_numerics_parse(const char *s, rp_numerics *out, rp_error *err) {
    if (s && !strcmp(s, "default")) *out = RP_NUMERICS_DEFAULT;
    else if (s && !strcmp(s, "invariant")) *out = RP_NUMERICS_INVARIANT;
    else return RP_FAIL(err, RP_ERR_INVALID, "numerics '%s': not default or invariant", s ? s : "(null)");
    return RP_OK;
}

const char *rp_attn_kind_name(rp_attn_kind k) {
    switch (k) {
    case RP_ATTN_MATH: return "math";
    case RP_ATTN_SPLIT: return "split";
    case RP_ATTN_SUBQUAD: return "subquad";
    case RP_ATTN_FLASH: return "flash";
    case RP_ATTN_AUTO: return "auto";
    }
    return "unknown";
}

rp_status rp_attn_cfg_check(const rp_attn_cfg *c, rp_error *err) {
    const char *name = rp_attn_kind_name(c->kind);
    if (c->kind < RP_ATTN_MATH || c->kind > RP_ATTN_AUTO)
        return RP_FAIL(err, RP_ERR_INVALID, "attention: unknown variant id %d", (int)c->kind);
    if (c->q_chunk < 0 || c->kv_chunk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "%s attention: chunk sizes must be >= 1 (0 = the variant's "
                       "default); got q_chunk %d, kv_chunk %d", name, c->q_chunk, c->kv_chunk);
    if (c->kind == RP_ATTN_MATH && (c->q_chunk || c->kv_chunk))
        return RP_FAIL(err, RP_ERR_INVALID, "math attention takes no chunk sizes (got q_chunk %d, "
                       "kv_chunk %d); chunks are for split, subquad, flash and auto", c->q_chunk, c->kv_chunk);
    if (c->kind == RP_ATTN_SPLIT && c->kv_chunk)
        return RP_FAIL(err, RP_ERR_INVALID, "split attention slices queries only: kv_chunk %d does not "
                       "apply (subquad and flash chunk keys)", c->kv_chunk);
    return RP_OK;
}

const char *rp_simd_name(rp_simd_level s) {
    switch (s) {
    case RP_SIMD_SSE2: return "sse2";
    case RP_SIMD_AVX2: return "avx2";
    case RP_SIMD_AVX512: return "avx512";
    }
    return "unknown";
}

/* ---- device profiles --------------------------------------------------------- */

#define GIB (1024LL * 1024 * 1024)

typedef struct profile_preset {
    const char *name;
    long long mem;
    rp_simd_level simd;
    int sdpa, split, flash_hd;
} profile_preset;

/* The "different hardware" the matrix sweeps; each makes a different choice for
 * the same model (auto.c says which and why). */
static const profile_preset PRESETS[] = {
    {"cpu-avx512-24g", 24 * GIB, RP_SIMD_AVX512, 1, 0, 256},
    {"cpu-avx2-8g", 8 * GIB, RP_SIMD_AVX2, 1, 0, 256},
    {"cpu-lowmem-2g", 2 * GIB, RP_SIMD_AVX2, 0, 1, 256},
    {"cpu-sse2-4g", 4 * GIB, RP_SIMD_SSE2, 1, 0, 256},
};
#define NPRESETS ((int)(sizeof PRESETS / sizeof PRESETS[0]))

const char *rp_device_profile_presets(void) {
    return "cpu-avx512-24g, cpu-avx2-8g, cpu-lowmem-2g, cpu-sse2-4g, host";
}

/* MemAvailable (else MemFree) in bytes; 0 when /proc/meminfo cannot be read. */
static long long host_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    long long avail = -1, free_kb = -1;
    while (fgets(line, sizeof line, f)) {
        long long v;
        if (sscanf(line, "MemAvailable: %lld kB", &v) == 1) avail = v;
        else if (sscanf(line, "MemFree: %lld kB", &v) == 1) free_kb = v;
    }
    fclose(f);
    long long kb = avail >= 0 ? avail : free_kb;
    return kb > 0 ? kb * 1024 : 0;
}

static rp_simd_level host_simd(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    /* the x86-64-v4 set, the same test tests/isa/compare.sh uses */
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return RP_SIMD_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return RP_SIMD_AVX2;
#endif
    return RP_SIMD_SSE2;
}

rp_device_profile rp_device_profile_host(void) {
    rp_device_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "host");
    p.mem_free = host_mem_available();
    p.simd = host_simd();
    p.sdpa = 0;
    p.split = 0;
    p.flash_max_head_dim = 256;
    return p;
}

/* "24g" -> 24 GiB. Digits, then at most one of k/m/g/t (binary units), any case. */
static int parse_size(const char *s, long long *out) {
    if (!s || !isdigit((unsigned char)*s)) return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || v < 0) return 0;
    long long mul = 1;
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k': mul = 1024LL; end++; break;
    case 'm': mul = 1024LL * 1024; end++; break;
    case 'g': mul = GIB; end++; break;
    case 't': mul = 1024LL * GIB; end++; break;
    default: return 0;
    }
    if (*end) return 0;
    if (v > (long long)(9.0e18 / (double)mul)) return 0; /* overflow */
    *out = v * mul;
    return 1;
}

static int parse_small_int(const char *s, int lo, int hi, int *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static int preset_profile(const char *name, rp_device_profile *p) {
    if (!strcmp(name, "host")) {
        *p = rp_device_profile_host();
        return 1;
    }
    for (int i = 0; i < NPRESETS; i++)
        if (!strcmp(name, PRESETS[i].name)) {
            memset(p, 0, sizeof *p);
            snprintf(p->name, sizeof p->name, "%s", PRESETS[i].name);
            p->mem_free = PRESETS[i].mem;
            p->simd = PRESETS[i].simd;
            p->sdpa = PRESETS[i].sdpa;
            p->split = PRESETS[i].split;
            p->flash_max_head_dim = PRESETS[i].flash_hd;
            return 1;
        }
    return 0;
}

rp_status rp_device_profile_parse(const char *spec, rp_device_profile *out, rp_error *err) {
    if (!spec || !*spec)
        return RP_FAIL(err, RP_ERR_INVALID, "device profile: empty (expected one of %s, or key=val,... "
                       "with keys mem, simd, sdpa, split, flash_hd)", rp_device_profile_presets());
    char buf[256];
    if (strlen(spec) >= sizeof buf)
        return RP_FAIL(err, RP_ERR_INVALID, "device profile: spec longer than %zu characters", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", spec);
    rp_device_profile p;
    int first = 1, based = 0;
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save), first = 0) {
        char *eq = strchr(item, '=');
        if (!eq) {
            if (!first)
                return RP_FAIL(err, RP_ERR_INVALID, "device profile '%s': '%s' is not key=val (only the "
                               "first item may name a preset)", spec, item);
            if (!preset_profile(item, &p))
                return RP_FAIL(err, RP_ERR_INVALID, "device profile '%s' is not known (presets: %s; or "
                               "key=val,... with keys mem, simd, sdpa, split, flash_hd)", item,
                               rp_device_profile_presets());
            based = 1;
            continue;
        }
        if (!based) { /* no base named: override this machine's values */
            p = rp_device_profile_host();
            based = 1;
        }
        *eq = '\0';
        const char *key = item, *val = eq + 1;
        int ok = 1;
        if (!strcmp(key, "mem")) ok = parse_size(val, &p.mem_free) && p.mem_free > 0;
        else if (!strcmp(key, "simd")) {
            if (!strcmp(val, "sse2")) p.simd = RP_SIMD_SSE2;
            else if (!strcmp(val, "avx2")) p.simd = RP_SIMD_AVX2;
            else if (!strcmp(val, "avx512")) p.simd = RP_SIMD_AVX512;
            else ok = 0;
        } else if (!strcmp(key, "sdpa")) ok = parse_small_int(val, 0, 1, &p.sdpa);
        else if (!strcmp(key, "split")) ok = parse_small_int(val, 0, 1, &p.split);
        else if (!strcmp(key, "flash_hd")) ok = parse_small_int(val, 1, 1 << 16, &p.flash_max_head_dim);
        else
            return RP_FAIL(err, RP_ERR_INVALID, "device profile '%s': unknown key '%s' (keys: mem, simd, "
                           "sdpa, split, flash_hd)", spec, key);
        if (!ok)
            return RP_FAIL(err, RP_ERR_INVALID, "device profile '%s': bad value '%s' for %s (mem: bytes > 0 "
                           "with optional k/m/g/t; simd: sse2|avx2|avx512; sdpa, split: 0|1; flash_hd: "
                           "1..65536)", spec, val, key);
    }
    if (!based)
        return RP_FAIL(err, RP_ERR_INVALID, "device profile '%s': no preset and no key=val item", spec);
    if (strchr(spec, ',') || strchr(spec, '=')) snprintf(p.name, sizeof p.name, "%s", spec);
    if (out) *out = p;
    return RP_OK;
}

/* Sizes print in the largest binary unit that divides them, so the text parses
 * back to the same bytes. */
void rp_device_profile_describe(const rp_device_profile *p, char *buf, size_t cap) {
    static const char units[] = "kmgt";
    long long v = p->mem_free;
    int u = -1;
    while (u < 3 && v > 0 && v % 1024 == 0) { v /= 1024; u++; }
    char mem[48];
    if (u >= 0) snprintf(mem, sizeof mem, "%lld%c", v, units[u]);
    else snprintf(mem, sizeof mem, "%lld", v);
    snprintf(buf, cap, "mem=%s,simd=%s,sdpa=%d,split=%d,flash_hd=%d", mem, rp_simd_name(p->simd), p->sdpa,
             p->split, p->flash_max_head_dim);
}

/* ---- OpenBLAS kernel set --------------------------------------------------------- */

const char *rp_blas_core_loaded(void) {
    const char *c = openblas_get_corename();
    return c ? c : "unknown";
}

/* Marks a process image that is the product of our re-exec for a core, so a core
 * the library will not load ends in an error instead of an exec loop. */
#define REEXEC_MARK "REPRO_CORETYPE_REEXEC"

/* This process's own argv from /proc/self/cmdline (NUL-separated), as a
 * NULL-terminated array in one allocation; NULL on failure. */
static char **self_cmdline(void) {
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *data = malloc(cap);
    size_t got;
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nd = realloc(data, cap * 2);
            if (!nd) { free(data); data = NULL; break; }
            data = nd;
            cap *= 2;
        }
    }
    fclose(f);
    if (!data || n == 0) { free(data); return NULL; }
    if (data[n - 1] != '\0') data[n++] = '\0'; /* n < cap here: the loop grows at n == cap */
    int argc = 0;
    for (size_t i = 0; i < n; i++) argc += data[i] == '\0';
    char **argv = malloc((size_t)(argc + 1) * sizeof *argv + n);
    if (!argv) { free(data); return NULL; }
    char *copy = (char *)(argv + argc + 1);
    memcpy(copy, data, n);
    free(data);
    int k = 0;
    for (size_t i = 0; i < n; i += strlen(copy + i) + 1) argv[k++] = copy + i;
    argv[k] = NULL;
    return argv;
}

rp_status rp_ctx_ensure_coretype(const char *core, char *const *argv, rp_error *err) {
    if (!core || !*core) return RP_OK;
    size_t len = strlen(core);
    int ok = len < sizeof ((rp_ctx *)0)->blas_core;
    for (size_t i = 0; ok && i < len; i++) ok = isalnum((unsigned char)core[i]) || core[i] == '_';
    if (!ok)
        return RP_FAIL(err, RP_ERR_INVALID, "OpenBLAS core type '%s': expected a kernel-set name such as "
                       "Haswell, SkylakeX or Cooperlake (letters, digits, '_', at most 31)", core);
    const char *loaded = rp_blas_core_loaded();
    const char *mark = getenv(REEXEC_MARK);
    if (!strcasecmp(loaded, core)) {
        if (mark) unsetenv(REEXEC_MARK); /* not inherited by processes we start */
        return RP_OK;
    }
    if (mark && !strcasecmp(mark, core))
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "OpenBLAS core type %s was requested (OPENBLAS_CORETYPE=%s) "
                       "but the library loaded %s kernels: this OpenBLAS (%s) or this CPU has no %s kernel "
                       "set; request %s to run with what it picks", core, core, loaded,
                       openblas_get_config(), core, loaded);
    char **own = NULL;
    if (!argv) {
        own = self_cmdline();
        if (!own)
            return RP_FAIL(err, RP_ERR_IO, "OpenBLAS core type %s: cannot read /proc/self/cmdline to "
                           "re-execute with OPENBLAS_CORETYPE set (set it in the environment instead)", core);
        argv = own;
    }
    /* the previous value, restored if the exec fails (processes we start later inherit it) */
    const char *prev_env = getenv("OPENBLAS_CORETYPE");
    char *prev = prev_env ? strdup(prev_env) : NULL;
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0 || setenv(REEXEC_MARK, core, 1) != 0) {
        free(own);
        free(prev);
        return RP_FAIL(err, RP_ERR_NOMEM, "OpenBLAS core type %s: cannot set the environment", core);
    }
    fflush(NULL); /* buffered output would otherwise be lost or printed twice */
    execv("/proc/self/exe", argv);
    int e = errno;
    free(own);
    unsetenv(REEXEC_MARK);
    if (prev) setenv("OPENBLAS_CORETYPE", prev, 1);
    else unsetenv("OPENBLAS_CORETYPE");
    free(prev);
    return RP_FAIL(err, RP_ERR_IO, "OpenBLAS core type %s: re-executing /proc/self/exe with "
                   "OPENBLAS_CORETYPE=%s failed: %s", core, core, strerror(e));
}

/* ---- the CLIs' engine options ---------------------------------------------------------- */

static rp_status parse_chunk(const char *opt, const char *s, int *out, rp_error *err) {
    if (!s) return RP_OK;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || errno || *end || v < 1 || v > (1L << 24))
        return RP_FAIL(err, RP_ERR_INVALID, "option --%s: '%s' is not a chunk size in 1..%ld (rows or keys "
                       "per chunk; leave the option out for the variant's default)", opt, s, 1L << 24);
    *out = (int)v;
    return RP_OK;
}

rp_status rp_ctx_configure(rp_ctx *ctx, const char *q_chunk, const char *kv_chunk, const char *coretype,
                           const char *device_profile, rp_error *err) {
    RP_TRY(parse_chunk("attention-q-chunk", q_chunk, &ctx->attn.q_chunk, err));
    RP_TRY(parse_chunk("attention-kv-chunk", kv_chunk, &ctx->attn.kv_chunk, err));
    rp_error e2;
    rp_error_clear(&e2);
    if (rp_attn_cfg_check(&ctx->attn, &e2) != RP_OK)
        return RP_FAIL(err, RP_ERR_INVALID, "options --attention-q-chunk/--attention-kv-chunk: %s", e2.msg);
    if (coretype) {
        size_t len = strlen(coretype);
        int ok = len > 0 && len < sizeof ctx->blas_core;
        for (size_t i = 0; ok && i < len; i++) ok = isalnum((unsigned char)coretype[i]) || coretype[i] == '_';
        if (!ok)
            return RP_FAIL(err, RP_ERR_INVALID, "option --openblas-coretype: '%s' is not a kernel-set name "
                           "(e.g. Haswell, SkylakeX, Cooperlake, Zen; letters, digits, '_', at most 31)", coretype);
        snprintf(ctx->blas_core, sizeof ctx->blas_core, "%s", coretype);
    }
    /* The host is read only when auto will use it: its free memory changes from
     * run to run, and a profile nothing reads should not make traces differ. */
    if (!device_profile && ctx->attn.kind != RP_ATTN_AUTO) return RP_OK;
    if (rp_device_profile_parse(device_profile ? device_profile : "host", &ctx->device, &e2) != RP_OK)
        return RP_FAIL(err, RP_ERR_INVALID, "option --device-profile: %s", e2.msg);
    return RP_OK;
}

/* ---- trace notes ------------------------------------------------------------------- */

void rp_trace_note_once(rp_trace *t, const char *key, const char *value) {
    if (!t) return;
    size_t kl = strlen(key);
    for (int i = t->n_notes - 1; i >= 0; i--) {
        const char *n = t->notes[i];
        if (!strncmp(n, key, kl) && n[kl] == '=') {
            if (!strcmp(n + kl + 1, value)) return;
            break; /* the latest value differs: note the new one */
        }
    }
    rp_trace_note(t, key, value);
}

void rp_ctx_trace_notes(const rp_ctx *ctx, rp_trace *t) {
    if (!t) return;
    char v[256];
    rp_trace_note_once(t, "precision", rp_precision_name(ctx->precision));
    rp_trace_note_once(t, "reduce_split", ctx->reduce_split ? "1" : "0");
    rp_trace_note_once(t, "numerics", rp_numerics_name(ctx->numerics));
    snprintf(v, sizeof v, "%d", ctx->threads);
    rp_trace_note_once(t, "threads", v);
    snprintf(v, sizeof v, "%d", openblas_get_num_threads());
    rp_trace_note_once(t, "openblas.threads", v);
    rp_trace_note_once(t, "openblas.coretype", ctx->blas_core[0] ? ctx->blas_core : "default");
    rp_trace_note_once(t, "openblas.core", rp_blas_core_loaded());
    rp_trace_note_once(t, "attention", rp_attn_kind_name(ctx->attn.kind));
    snprintf(v, sizeof v, "%d", ctx->attn.q_chunk);
    rp_trace_note_once(t, "attention.q_chunk", v);
    snprintf(v, sizeof v, "%d", ctx->attn.kv_chunk);
    rp_trace_note_once(t, "attention.kv_chunk", v);
    rp_trace_note_once(t, "device_profile", ctx->device.name[0] ? ctx->device.name : "none");
    if (ctx->device.name[0]) {
        rp_device_profile_describe(&ctx->device, v, sizeof v);
        rp_trace_note_once(t, "device_profile.spec", v);
    }
}
