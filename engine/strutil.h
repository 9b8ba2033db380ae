/* strutil.h — string helpers shared by the engine and the harness. */
#ifndef REPRO_STRUTIL_H
#define REPRO_STRUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Levenshtein distance of a and b, each clipped at 127 characters (for "did you mean"
 * suggestions on keys, names and tensor names). */
int rp_edit_distance(const char *a, const char *b);

/* Parses s as a whole unsigned decimal (a digit first: no sign, space or empty string)
 * into *out; 1 on success, 0 when s is not one or overflows 64 bits. */
int rp_parse_u64(const char *s, uint64_t *out);

/* printf-appends to the string in buf (cap bytes), truncating at the end of buf; a
 * full buf is left as it is. For messages assembled piece by piece. */
void rp_appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
