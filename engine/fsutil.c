#include "fsutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

rp_status rp_atomic_target_ok(const char *path, rp_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) return RP_OK;
        return RP_FAIL(err, RP_ERR_IO, "%s: cannot check the output path: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return RP_FAIL(err, RP_ERR_IO,
                       "%s: refusing to write: not a regular file (outputs are written to a "
                       "temporary name and renamed over the target)", path);
    return RP_OK;
}

rp_status rp_write_text_atomic(const char *path, const char *text, rp_error *err) {
    RP_TRY(rp_atomic_target_ok(path, err));
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return RP_FAIL(err, RP_ERR_IO, "%s: write failed", path);
    }
    return RP_OK;
}

rp_status rp_read_file(const char *path, size_t max, const char *what, char **buf, size_t *size, rp_error *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return RP_FAIL(err, RP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(fp);
        return RP_FAIL(err, RP_ERR_IO, "%s: not a regular file", path);
    }
    if ((unsigned long long)st.st_size > max) {
        fclose(fp);
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: %lld bytes is too large for %s (at most %zu)", path,
                       (long long)st.st_size, what, max);
    }
    size_t n = (size_t)st.st_size;
    char *b = malloc(n + 1);
    if (!b) {
        fclose(fp);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %zu bytes to read it", path, n);
    }
    size_t got = n ? fread(b, 1, n, fp) : 0;
    int bad = ferror(fp);
    fclose(fp);
    if (got != n || bad) {
        free(b);
        return RP_FAIL(err, RP_ERR_IO, "%s: read %zu of %zu bytes", path, got, n);
    }
    b[n] = '\0';
    *buf = b;
    *size = n;
    return RP_OK;
}

int rp_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int rp_exhausted_text(const char *text) {
    static const int codes[] = {ENOSPC, EDQUOT, EMFILE, ENFILE};
    for (size_t k = 0; text && k < sizeof codes / sizeof codes[0]; k++)
        if (strstr(text, strerror(codes[k]))) return 1;
    return 0;
}

int rp_pathf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= cap;
}
