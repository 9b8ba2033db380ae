/* device_iface.c — the parts of the device interface (device.h) that every device and the
 * dispatch share: the sticky error, and the rules for a device's name. In the engine's
 * core, below both engine/device/ (the dispatch, which opens the CUDA device) and
 * engine/cuda/ (a device, which records its errors and picks its GPU by these rules), so
 * neither of those two folders calls the other's code both ways. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device.h"

void rp_device_fail(rp_device *d, rp_status st, const rp_error *err) {
    if (d->status != RP_OK || st == RP_OK) return;
    d->status = st;
    d->err = *err;
}

int rp_device_name_is_cuda(const char *name) { return !strcmp(name, "cuda") || !strncmp(name, "cuda:", 5); }

int rp_device_selects(const char *device, int ordinal, const char *gpu_name) {
    if (!strcmp(device, "cuda")) return 1;
    if (strncmp(device, "cuda:", 5) != 0) return 0;
    const char *want = device + 5;
    if (want[0] == '#') return atoi(want + 1) == ordinal;
    const size_t n = strlen(want);
    for (const char *h = gpu_name; *h; h++)
        if (strncasecmp(h, want, n) == 0) return 1;
    return n == 0;
}
