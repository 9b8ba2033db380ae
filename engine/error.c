#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

rp_status rp_error_set(rp_error *err, rp_status code, const char *file, int line,
                       const char *fmt, ...) {
    if (!err) return code;
    err->code = code;
    const char *base = strstr(file, "engine/");
    if (!base) base = strstr(file, "harness/");
    if (!base) base = strstr(file, "backends/");
    if (!base) base = file;
    snprintf(err->where, sizeof err->where, "%s:%d", base, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void rp_error_clear(rp_error *err) {
    if (!err) return;
    err->code = RP_OK;
    err->where[0] = err->msg[0] = '\0';
}

const char *rp_status_name(rp_status s) {
    switch (s) {
    case RP_OK: return "ok";
    case RP_ERR_INVALID: return "invalid";
    case RP_ERR_IO: return "io";
    case RP_ERR_FORMAT: return "format";
    case RP_ERR_SHAPE: return "shape";
    case RP_ERR_NOT_FOUND: return "not-found";
    case RP_ERR_NOMEM: return "nomem";
    case RP_ERR_UNSUPPORTED: return "unsupported";
    case RP_ERR_COMM: return "comm";
    case RP_ERR_TIMEOUT: return "timeout";
    }
    return "unknown";
}

int rp_report_error(const rp_error *err) {
    fprintf(stderr, "repro: error: %s", err->msg);
    if (err->where[0]) fprintf(stderr, "  [%s]", err->where);
    fputc('\n', stderr);
    return 1;
}
