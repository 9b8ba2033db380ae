/* image.h — 8-bit RGB images as PNG files (libpng). */
#ifndef REPRO_IMAGE_H
#define REPRO_IMAGE_H

#include <stdint.h>

#include "error.h"

/* Writes rgb (H, W, 3) to path as an 8-bit RGB PNG, atomically (tmp + rename).
 * The PNG carries no time stamp, so equal pixels give byte-identical files. */
rp_status rp_png_write(const char *path, const uint8_t *rgb, int W, int H, rp_error *err);

/* Reads an 8-bit RGB or RGBA or gray PNG into *rgb (H, W, 3), malloc'd (caller frees).
 * Errors name the file and what is wrong with it. */
rp_status rp_png_read(const char *path, uint8_t **rgb, int *W, int *H, rp_error *err);

#endif
