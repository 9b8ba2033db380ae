/* image_png.c — 8-bit RGB PNG files through libpng (contract in image.h).
 *
 * Writing is deterministic: no tIME (nor any other ancillary) chunk, a fixed
 * zlib level and a fixed filter set, so equal pixels give equal bytes with a
 * given libpng/zlib build. Files appear atomically (path.tmp.<pid>, rename).
 *
 * libpng reports errors by longjmp; the handlers below copy its message into a
 * state struct first, and the locals that live across setjmp are volatile. */
#include "image.h"
#include "fsutil.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PNG_ZLIB_LEVEL 6 /* fixed: part of what makes output bytes reproducible */
/* Reading limits: a hostile file must not cost unbounded memory or time. The largest
 * image repro writes is 16384 x 16384 (SD3/FLUX width and height); no ancillary chunk
 * it reads is needed at all, so a few small ones are enough. */
#define PNG_MAX_DIM 16384
#define PNG_MAX_PIXELS ((size_t)16384 * 16384)
#define PNG_MAX_FILE ((size_t)1 << 30)     /* 16384^2 RGB is 768 MiB raw */
#define PNG_MAX_CHUNK_CACHE 128            /* ancillary chunks kept */
#define PNG_MAX_CHUNK_MALLOC (1u << 20)    /* bytes for one ancillary chunk (tEXt, iCCP...) */

typedef struct png_state {
    jmp_buf jmp;
    char msg[256];        /* libpng's error text */
    char warn[160];       /* its first warning (why an IHDR is invalid, e.g. a user limit) */
    const uint8_t *data;  /* reader: the whole file */
    size_t size, pos;
} png_state;

static void on_error(png_structp png, png_const_charp msg) {
    png_state *s = png_get_error_ptr(png);
    if (s->warn[0]) snprintf(s->msg, sizeof s->msg, "%s (%s)", msg, s->warn);
    else snprintf(s->msg, sizeof s->msg, "%s", msg);
    longjmp(s->jmp, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    png_state *s = png_get_error_ptr(png);
    if (!s->warn[0]) snprintf(s->warn, sizeof s->warn, "%s", msg);
}

/* ---- write ------------------------------------------------------------------- */

rp_status rp_png_write(const char *path, const uint8_t *rgb, int W, int H, rp_error *err) {
    if (W < 1 || H < 1 || W > PNG_MAX_DIM || H > PNG_MAX_DIM)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: image size %dx%d not in [1, %d]", path, W, H, PNG_MAX_DIM);
    RP_TRY(rp_atomic_target_ok(path, err));
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: path too long", path);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) return RP_FAIL(err, RP_ERR_IO, "%s: cannot create '%s': %s", path, tmp, strerror(errno));

    png_state st;
    memset(&st, 0, sizeof st);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        fclose(fp);
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory starting libpng", path);
    }
    if (setjmp(st.jmp)) {
        /* png, info, fp and tmp are not modified after setjmp, so they are valid here; a
         * failed fwrite in libpng's write callback ("Write Error") left its reason in errno */
        const int e = errno, io = ferror(fp);
        png_destroy_write_struct(&png, &info);
        fclose(fp);
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_IO, "%s: writing PNG failed: %s%s%s", path, st.msg, io ? ": " : "",
                       io ? strerror(e) : "");
    }
    png_init_io(png, fp);
    png_set_compression_level(png, PNG_ZLIB_LEVEL);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
    png_set_IHDR(png, info, (png_uint_32)W, (png_uint_32)H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < H; y++) png_write_row(png, (png_const_bytep)(rgb + (size_t)y * W * 3));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);

    int bad = ferror(fp);
    if (fflush(fp) != 0) bad = 1;
    int e = errno;
    if (fclose(fp) != 0 && !bad) { bad = 1; e = errno; }
    if (bad) {
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_IO, "%s: writing '%s' failed: %s", path, tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return RP_FAIL(err, RP_ERR_IO, "%s: renaming '%s' into place failed: %s", path, tmp, strerror(e));
    }
    return RP_OK;
}

/* ---- read -------------------------------------------------------------------- */

static void read_mem(png_structp png, png_bytep dst, png_size_t n) {
    png_state *s = png_get_io_ptr(png);
    if (n > s->size - s->pos) {
        /* png_error copies into s->msg via on_error, then longjmps */
        char m[128];
        snprintf(m, sizeof m, "file is truncated (needed %zu bytes at offset %zu, file has %zu)",
                 (size_t)n, s->pos, s->size);
        png_error(png, m);
    }
    memcpy(dst, s->data + s->pos, n);
    s->pos += n;
}

/* Reads the whole of path into a malloc'd buffer. Not inlined: its locals must
 * stay out of rp_png_read's setjmp frame. */
__attribute__((noinline)) static rp_status slurp(const char *path, uint8_t **data, size_t *size, rp_error *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return RP_FAIL(err, RP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap) break;
        const int not_png = png_sig_cmp(buf, 0, 8) != 0;
        if (not_png || cap >= PNG_MAX_FILE) { /* e.g. /dev/zero: stop reading */
            free(buf);
            fclose(fp);
            return not_png ? RP_FAIL(err, RP_ERR_FORMAT, "%s: not a PNG file (bad signature)", path)
                                          : RP_FAIL(err, RP_ERR_FORMAT, "%s: larger than %zu MiB; not an image "
                                                    "repro reads", path, PNG_MAX_FILE >> 20);
        }
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!buf) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory reading the file", path);
    if (bad) {
        free(buf);
        return RP_FAIL(err, RP_ERR_IO, "%s: read error", path);
    }
    *data = buf;
    *size = n;
    return RP_OK;
}

rp_status rp_png_read(const char *path, uint8_t **rgb, int *W, int *H, rp_error *err) {
    uint8_t *data = NULL;
    size_t size = 0;
    RP_TRY(slurp(path, &data, &size, err));
    if (size < 8 || png_sig_cmp(data, 0, 8)) {
        free(data);
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: not a PNG file (bad signature)", path);
    }
    png_state st;
    memset(&st, 0, sizeof st);
    st.data = data;
    st.size = size;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        free(data);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory starting libpng", path);
    }
    /* assigned after setjmp, read in the error path: volatile */
    uint8_t *volatile pix = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(st.jmp)) {
        png_destroy_read_struct(&png, &info, NULL);
        free(pix);
        free(rows);
        free(data);
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: corrupt PNG: %s", path, st.msg);
    }
    png_set_read_fn(png, &st, read_mem);
    png_set_user_limits(png, PNG_MAX_DIM, PNG_MAX_DIM);
    png_set_chunk_cache_max(png, PNG_MAX_CHUNK_CACHE);
    png_set_chunk_malloc_max(png, PNG_MAX_CHUNK_MALLOC);
    /* libpng 1.6 reports an over-limit chunk as a "benign" error, which by default only
     * warns and then allocates the chunk anyway (a 112-byte file took 1.3 GB): make it fatal */
    png_set_benign_errors(png, 0);
    png_read_info(png, info);
    if ((size_t)png_get_image_width(png, info) * png_get_image_height(png, info) > PNG_MAX_PIXELS)
        png_error(png, "more pixels than the largest image repro writes (16384 x 16384)");
    /* Normalise to 8-bit RGB: palette -> RGB, gray < 8 bits -> 8, 16 -> 8 bits,
     * gray -> RGB, alpha dropped (not composited: the pixels' colour is kept). */
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
        png_get_rowbytes(png, info) != (size_t)w * 3)
        png_error(png, "unsupported pixel format after conversion to 8-bit RGB");
    pix = malloc((size_t)w * h * 3);          /* (h, w, 3) */
    rows = malloc((size_t)h * sizeof *rows);  /* (h) row pointers into pix */
    if (!pix || !rows) png_error(png, "out of memory for the pixels");
    for (png_uint_32 y = 0; y < h; y++) rows[y] = pix + (size_t)y * w * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    free(data);
    *rgb = pix;
    *W = (int)w;
    *H = (int)h;
    return RP_OK;
}
