/* fsutil.h — small file-system helpers shared by every atomic writer. */
#ifndef REPRO_FSUTIL_H
#define REPRO_FSUTIL_H

#include <stddef.h>

#include "error.h"

/* Atomic writers write path.tmp.<pid> and rename(2) it over path. rename
 * replaces whatever path names — as root even /dev/null — so every writer
 * calls this first: RP_OK if path does not exist or is a regular file (or a
 * symlink to one), else RP_ERR_IO naming the path. */
rp_status rp_atomic_target_ok(const char *path, rp_error *err);

/* Writes text and a newline to path atomically (rp_atomic_target_ok, then path.tmp.<pid>
 * and rename(2)); on failure the temporary is removed. Errors name the path. */
rp_status rp_write_text_atomic(const char *path, const char *text, rp_error *err);

/* Reads the regular file at path whole into a fresh buffer *buf (the caller's to free),
 * *size bytes followed by a NUL, so that a text reads as a string. A file of more than max
 * bytes is refused (RP_ERR_FORMAT: "too large for <what>"). Errors name the path. */
rp_status rp_read_file(const char *path, size_t max, const char *what, char **buf, size_t *size, rp_error *err);

/* 1 when text reports that the machine ran out of a resource rather than a failure of
 * the code: the disk or quota full, no file descriptors left (strerror's words for ENOSPC,
 * EDQUOT, EMFILE, ENFILE, as error messages and stderr carry them). */
int rp_exhausted_text(const char *text);

/* 1 when path names a regular file (following links). */
int rp_is_file(const char *path);

/* snprintf into buf (cap bytes); 1 when it did not fit. */
int rp_pathf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
