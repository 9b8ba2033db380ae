/* fuzz_png.c — libFuzzer target: the PNG reader (libpng with repro's limits, then the
 * conversion to 8-bit RGB). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/image.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    const int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    uint8_t *rgb = NULL;
    int W = 0, H = 0;
    rp_error err;
    rp_error_clear(&err);
    if (rp_png_read(path, &rgb, &W, &H, &err) == RP_OK) free(rgb);
    close(fd);
    return 0;
}
