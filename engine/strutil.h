/* strutil.h — string helpers shared by the engine and the harness. */
#ifndef REPRO_STRUTIL_H
#define REPRO_STRUTIL_H

/* Levenshtein distance of a and b, each clipped at 127 characters (for "did you mean"
 * suggestions on keys, names and tensor names). */
int rp_edit_distance(const char *a, const char *b);

#endif
