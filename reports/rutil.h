/* rutil.h — helpers shared by the report writers (reports/ only): a growing
 * text buffer with HTML/XML/Markdown escaping and base64, atomic file output,
 * lenient JSON getters and number formatting. */
#ifndef REPRO_RUTIL_H
#define REPRO_RUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "engine/fsutil.h" /* rp_is_file, rp_read_file */

/* A growing NUL-terminated string. Allocation failure is sticky (oom = 1):
 * later appends do nothing and rp_sb_write reports it, so writers need not
 * check every append. */
typedef struct rp_sb {
    char *p;
    size_t n, cap;
    int oom;
} rp_sb;

void rp_sb_free(rp_sb *b);
void rp_sb_putn(rp_sb *b, const char *s, size_t n);
void rp_sb_puts(rp_sb *b, const char *s);
void rp_sb_printf(rp_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s escaped for HTML text and attribute values (& < > " '). */
void rp_sb_html(rp_sb *b, const char *s);
/* s escaped for XML 1.0 (as HTML, and control characters other than tab/newline dropped,
 * since XML 1.0 cannot carry them even as references). */
void rp_sb_xml(rp_sb *b, const char *s);
/* s for a Markdown table cell: '|' and '`' escaped, newlines as spaces, and '<' / '&'
 * escaped where they could start an HTML tag or entity. */
void rp_sb_md(rp_sb *b, const char *s);
/* data as base64 (RFC 4648, padded, no line breaks). */
void rp_sb_base64(rp_sb *b, const uint8_t *data, size_t n);

/* Writes b to path atomically (rp_atomic_target_ok, path.tmp.<pid>, rename).
 * RP_ERR_NOMEM when b ran out of memory. */
rp_status rp_sb_write(const rp_sb *b, const char *path, rp_error *err);

/* Copies src into dst (cap bytes), truncated and NUL-terminated. */
void rp_copy(char *dst, size_t cap, const char *src);

/* JSON getters: the default when the member is absent or of another type.
 * Numbers also accept the store's "inf" / "-inf" / "nan" strings. */
double rp_j_num(const cJSON *o, const char *key, double def);
const char *rp_j_str(const cJSON *o, const char *key, const char *def);
const cJSON *rp_j_get(const cJSON *o, const char *key);
/* o.k1.k2... (NULL-terminated keys); NULL when a step is missing. */
const cJSON *rp_j_path(const cJSON *o, ...);
/* A number that may be inf/nan: added as a number, or as "inf"/"-inf"/"nan". */
void rp_j_put_num(cJSON *o, const char *key, double v);

/* Formatting for people ("-" for NaN): PSNR "90.28 dB" / "inf"; SSIM "0.99999";
 * shares as percent "0.018%"; small magnitudes "4.88e-04". */
void rp_fmt_psnr(double v, char *buf, size_t cap);
void rp_fmt_ssim(double v, char *buf, size_t cap);
void rp_fmt_pct(double v, char *buf, size_t cap);
void rp_fmt_sci(double v, char *buf, size_t cap);

/* 1 when path is an existing directory (rp_is_file: engine/fsutil.h). */
int rp_is_dir(const char *path);


/* ---- report internals shared between the reports/ files ----------------------- */

/* Compares candidate result directory b with reference directory a as the
 * runner's metrics.json "vs_reference" does: "latents" (max_abs, mean_abs,
 * rel_l2, cosine, bitwise_equal) when both hold latents.safetensors,
 * "trajectory_rel_l2" when both have a trajectory of one shape, "images" (one
 * entry per image-<i>.png present in both) and "worst_image", "identical".
 * Returns that object, or {"error": why} when the outputs cannot be compared
 * (*ok = 0); NULL only out of memory. */
cJSON *rp_outputs_compare(const char *a, const char *b, int *ok);

#endif
