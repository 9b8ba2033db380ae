/* fuzz_safetensors.c — libFuzzer target: the safetensors reader (header JSON, offsets,
 * metadata) and the dtype conversions of every tensor it accepts. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/safetensors.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    const int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    rp_st_file *f = NULL;
    rp_error err;
    rp_error_clear(&err);
    if (rp_st_open(path, &f, &err) == RP_OK) {
        for (int i = 0; i < f->n; i++) {
            float *x = NULL;
            const rp_st_tensor *t = NULL;
            if (rp_st_read_f32_alloc(f, f->tensors[i].name, &x, &t, &err) != RP_OK) continue;
            /* the borrowed floats (a view or a copy) are the read's, bit for bit */
            float *v = NULL, *own = NULL;
            if (rp_st_f32_borrow(f, t, &v, &own, &err) != RP_OK || memcmp(v, x, sizeof(float) * t->numel)) abort();
            free(own);
            free(x);
        }
        for (int i = 0; i < f->n_meta; i++) (void)rp_st_meta(f, f->meta_keys[i]);
        rp_st_close(f);
    }
    close(fd);
    return 0;
}
