/* rutil.c — see rutil.h. */
#include "reports/rutil.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/fsutil.h"

void rp_sb_free(rp_sb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Makes room for extra more bytes plus the NUL; 0 on failure (sticky). */
static int sb_reserve(rp_sb *b, size_t extra) {
    if (b->oom) return 0;
    if (b->n + extra + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void rp_sb_putn(rp_sb *b, const char *s, size_t n) {
    if (!sb_reserve(b, n)) return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void rp_sb_puts(rp_sb *b, const char *s) { rp_sb_putn(b, s, strlen(s)); }

void rp_sb_printf(rp_sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* The escape of c for HTML/XML, or NULL when c stands for itself. */
static const char *ml_escape(char c) {
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    default: return NULL;
    }
}

void rp_sb_html(rp_sb *b, const char *s) {
    for (const char *p = s; *p; p++) {
        const char *e = ml_escape(*p);
        if (e) rp_sb_puts(b, e);
        else rp_sb_putn(b, p, 1);
    }
}

void rp_sb_xml(rp_sb *b, const char *s) {
    for (const char *p = s; *p; p++) {
        const unsigned char c = (unsigned char)*p;
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
        const char *e = ml_escape(*p);
        if (e) rp_sb_puts(b, e);
        else rp_sb_putn(b, p, 1);
    }
}

void rp_sb_md(rp_sb *b, const char *s) {
    for (const char *p = s; *p; p++) {
        if (*p == '|') rp_sb_puts(b, "\\|");
        else if (*p == '\n' || *p == '\r' || *p == '\t') rp_sb_puts(b, " ");
        /* only what could start a tag or an entity is escaped: "0.71 < 0.90" stays
         * readable in a terminal, "<script>" cannot act in a CI comment */
        else if (*p == '<' && (isalpha((unsigned char)p[1]) || (p[1] && strchr("/!?", p[1])))) rp_sb_puts(b, "&lt;");
        else if (*p == '&' && (isalnum((unsigned char)p[1]) || p[1] == '#')) rp_sb_puts(b, "&amp;");
        else if (*p == '`') rp_sb_puts(b, "\\`");
        else rp_sb_putn(b, p, 1);
    }
}

void rp_sb_base64(rp_sb *b, const uint8_t *d, size_t n) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (!sb_reserve(b, (n + 2) / 3 * 4)) return;
    char *o = b->p + b->n;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *o++ = T[v >> 18];
        *o++ = T[v >> 12 & 63];
        *o++ = T[v >> 6 & 63];
        *o++ = T[v & 63];
    }
    if (n - i == 1) {
        const uint32_t v = (uint32_t)d[i] << 16;
        *o++ = T[v >> 18];
        *o++ = T[v >> 12 & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        const uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
        *o++ = T[v >> 18];
        *o++ = T[v >> 12 & 63];
        *o++ = T[v >> 6 & 63];
        *o++ = '=';
    }
    b->n = (size_t)(o - b->p);
    b->p[b->n] = '\0';
}

rp_status rp_sb_write(const rp_sb *b, const char *path, rp_error *err) {
    if (b->oom) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory building %s", path);
    RP_TRY(rp_atomic_target_ok(path, err));
    char tmp[4200];
    if (rp_pathf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()))
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    const size_t n = b->n;
    const int ok = (n == 0 || fwrite(b->p, 1, n, f) == n) & (fflush(f) == 0) & (fsync(fileno(f)) == 0);
    const int e = errno;
    if (fclose(f) != 0 || !ok) {
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_IO, "cannot write %s: %s", tmp, strerror(ok ? errno : e));
    }
    if (rename(tmp, path) != 0) {
        const int e2 = errno;
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(e2));
    }
    return RP_OK;
}

void rp_copy(char *dst, size_t cap, const char *src) {
    if (!cap) return;
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

const cJSON *rp_j_get(const cJSON *o, const char *key) {
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

double rp_j_num(const cJSON *o, const char *key, double def) {
    const cJSON *v = rp_j_get(o, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "inf")) return INFINITY;
        if (!strcmp(v->valuestring, "-inf")) return -INFINITY;
        if (!strcmp(v->valuestring, "nan")) return NAN;
    }
    return def;
}

const char *rp_j_str(const cJSON *o, const char *key, const char *def) {
    const cJSON *v = rp_j_get(o, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : def;
}

const cJSON *rp_j_path(const cJSON *o, ...) {
    va_list ap;
    va_start(ap, o);
    const char *k;
    while (o && (k = va_arg(ap, const char *)) != NULL) o = rp_j_get(o, k);
    va_end(ap);
    return o;
}

void rp_j_put_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddStringToObject(o, key, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

void rp_fmt_psnr(double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else if (isinf(v)) snprintf(buf, cap, "inf");
    else snprintf(buf, cap, "%.2f dB", v);
}

void rp_fmt_ssim(double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else if (v == 1.0) snprintf(buf, cap, "1");
    else snprintf(buf, cap, "%.5f", v);
}

void rp_fmt_pct(double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else if (v == 0) snprintf(buf, cap, "0%%");
    else if (v * 100 < 0.01) snprintf(buf, cap, "%.1e%%", v * 100);
    else snprintf(buf, cap, "%.3g%%", v * 100);
}

void rp_fmt_sci(double v, char *buf, size_t cap) {
    if (isnan(v)) snprintf(buf, cap, "-");
    else if (isinf(v)) snprintf(buf, cap, v > 0 ? "inf" : "-inf");
    else if (v == 0) snprintf(buf, cap, "0");
    else snprintf(buf, cap, "%.2e", v);
}

int rp_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

