#include "fsutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
