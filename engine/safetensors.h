/* safetensors.h — reader and writer for the safetensors format.
 *
 * File: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"k": "v"}}, then the data region. The reader checks every
 * offset and shape against the file size and the dtype size, and refuses
 * overlapping or out-of-range tensors, with a message naming the tensor. */
#ifndef REPRO_SAFETENSORS_H
#define REPRO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define RP_ST_MAX_DIMS 8

typedef enum rp_dtype { RP_DT_F32 = 0, RP_DT_F16, RP_DT_BF16, RP_DT_F64, RP_DT_I64, RP_DT_I32, RP_DT_U8 } rp_dtype;

typedef struct rp_st_tensor {
    char *name;
    rp_dtype dtype;
    int ndim;
    int64_t shape[RP_ST_MAX_DIMS];
    size_t numel;
    const void *data;     /* points into the file's data region (little-endian; may be
                           * unaligned if a foreign writer did not pad the header) */
    size_t nbytes;
} rp_st_tensor;

typedef struct rp_st_file {
    char *path;
    void *map;            /* the whole file: mapped (mapped bytes) or read into memory */
    size_t size;
    size_t mapped;        /* bytes of map that rp_st_open mmapped, 0 when it is malloc'd */
    int n;
    rp_st_tensor *tensors; /* sorted by name */
    int n_meta;
    char **meta_keys, **meta_values;
    int n_parts;
    struct rp_st_file **parts; /* files this one's tensors point into (a sharded or renamed
                                * view, engine/st_compose.h); closed with it */
} rp_st_file;

/* Opens and validates path. On failure *out is untouched and err names the
 * file and the broken rule ("...: tensor 'blocks.0.attn.qkv.weight': data_offsets
 * [0, 400] exceed the data region (200 bytes)"). */
rp_status rp_st_open(const char *path, rp_st_file **out, rp_error *err);
void rp_st_close(rp_st_file *f);

/* Looks up a tensor by exact name; NULL if absent. */
const rp_st_tensor *rp_st_find(const rp_st_file *f, const char *name);
/* Formats shape as "[a, b, c]" into buf (cap bytes, always NUL-terminated); returns buf. */
const char *rp_st_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);

/* Metadata value or NULL. */
const char *rp_st_meta(const rp_st_file *f, const char *key);

/* Copies tensor `name` into dst (numel floats) converting F32/F16/BF16/F64 to
 * float, after checking its shape equals shape[0..ndim). Errors name the file,
 * the tensor and both shapes. */
rp_status rp_st_read_f32(const rp_st_file *f, const char *name, int ndim, const int64_t *shape,
                         float *dst, rp_error *err);

/* Tensor `name` of f read as floats into a new array (*out, the caller frees; NULL
 * on failure) with its record in *t. Absent -> RP_ERR_NOT_FOUND naming file and tensor. */
rp_status rp_st_read_f32_alloc(const rp_st_file *f, const char *name, float **out, const rp_st_tensor **t,
                               rp_error *err);

/* Tensor t of f as floats without a copy: a pointer into f's bytes when t is F32 and
 * 4-byte aligned there, else NULL (read it with rp_st_read_f32). Valid until
 * rp_st_close(f); writes are the process's own (the mapping is private). A view of a file
 * in the page cache costs its pages' mapping only, where a copy also faults in as much new
 * memory (on a paravirtualised VM a fault is ~15 us: a trace read whole is most of a
 * classifier run's system time). */
float *rp_st_f32_view(const rp_st_file *f, const rp_st_tensor *t);

/* Tensor t of f (found in f) as floats in *out: its view where there is one, else a new
 * array holding its values converted (rp_st_read_f32), which *owned also points to (the
 * caller frees *owned; NULL for a view, and both NULL on failure). */
rp_status rp_st_f32_borrow(const rp_st_file *f, const rp_st_tensor *t, float **out, float **owned, rp_error *err);

/* 1 when a and b have the same shape (rank and every dimension). */
int rp_st_same_shape(const rp_st_tensor *a, const rp_st_tensor *b);

size_t rp_dtype_size(rp_dtype dt);
const char *rp_dtype_name(rp_dtype dt);

/* ---- writer --------------------------------------------------------------- */

typedef struct rp_st_writer rp_st_writer;

rp_st_writer *rp_st_writer_new(void);
/* Adds a tensor (data copied at write time, so it must stay valid until
 * rp_st_writer_write). Names must be unique. */
rp_status rp_st_writer_add(rp_st_writer *w, const char *name, rp_dtype dtype, int ndim,
                           const int64_t *shape, const void *data, rp_error *err);
/* Like rp_st_writer_add, but the bytes are produced at write time: fill(user,
 * dst, nbytes) must fill dst completely (nbytes = numel * dtype size). Lets a
 * large file be written holding only one tensor in memory at a time; user must
 * stay valid until rp_st_writer_write. */
typedef void (*rp_st_fill_fn)(void *user, void *dst, size_t nbytes);
rp_status rp_st_writer_add_fill(rp_st_writer *w, const char *name, rp_dtype dtype, int ndim,
                                const int64_t *shape, rp_st_fill_fn fill, void *user, rp_error *err);
/* Sets metadata key = value (a repeated key replaces the value). */
rp_status rp_st_writer_meta(rp_st_writer *w, const char *key, const char *value, rp_error *err);
/* Writes to path atomically: path.tmp.<pid>, fsync, then rename(2). Tensors are
 * laid out in name order whatever the order of adds, so equal contents give
 * equal bytes. The writer may be freed (not reused) afterwards. */
rp_status rp_st_writer_write(rp_st_writer *w, const char *path, rp_error *err);
void rp_st_writer_free(rp_st_writer *w);

#endif
