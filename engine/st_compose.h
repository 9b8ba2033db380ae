/* st_compose.h — checkpoints as they ship: one rp_st_file made of other files' tensors.
 *
 * rp_weights_open is how every model loader opens a weights path:
 *   *.json            a sharded checkpoint's index (diffusers / transformers
 *                     "<name>.safetensors.index.json": {"weight_map": {tensor: shard}}),
 *                     rp_st_open_index;
 *   anything else     one safetensors file, rp_st_open;
 * then rp_st_remap gives the tensors diffusers' names when the file uses another
 * naming (BFL / ComfyUI FLUX, SD3's original single files, LDM-named VAEs such as BFL's
 * ae.safetensors or a single file's first_stage_model.*; see st_remap.c).
 * The result is an ordinary rp_st_file (rp_st_find / rp_st_read_f32 / rp_st_close):
 * its tensors point into the shards' or the original file's data, so a tensor reads
 * bitwise as it would from a single diffusers-named file holding the same bytes. */
#ifndef REPRO_ST_COMPOSE_H
#define REPRO_ST_COMPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "safetensors.h"

/* Opens path as above. Errors name the file (and index, shard, tensor) at fault. */
rp_status rp_weights_open(const char *path, rp_st_file **out, rp_error *err);

/* rp_weights_open, refusing a synthetic file made for another preset than model (its
 * "repro.model" metadata) with RP_ERR_INVALID naming both. The caller closes *out. */
rp_status rp_weights_open_for(const char *path, const char *model, rp_st_file **out, rp_error *err);

/* A sharded checkpoint: every tensor of the index's weight_map read from its shard
 * (resolved relative to the index's directory; a plain file name, no '/'), each shard
 * opened once. The shards' metadata is merged (first shard in name order wins a key).
 * A missing or unreadable shard, a tensor absent from its shard, or a malformed index
 * is an error naming the index, the tensor and the shard. */
rp_status rp_st_open_index(const char *index_path, rp_st_file **out, rp_error *err);

/* If (*f) uses BFL / ComfyUI FLUX, SD3-original or LDM VAE names (or both a transformer's
 * and a VAE's, as a single-file checkpoint does), replaces *f with a view under diffusers'
 * names (fused q/k/v split into row ranges; (shift, scale) halves swapped where diffusers
 * stores (scale, shift); the VAE's up levels reversed, its 1x1-conv attention weights read
 * as [C, C]); the view owns the original. Otherwise *f is unchanged. A name under a
 * model's prefix that the mapping does not know is an error with the nearest known name;
 * the file's other tensors (text encoders, ...) are left out. On error *f is closed and set
 * to NULL. */
rp_status rp_st_remap(rp_st_file **f, rp_error *err);

/* ---- building a composed file (st_compose.c) ---------------------------------------- */

/* An empty file labelled path with room for cap tensors and own_bytes of its own data
 * (f->map, for tensors that are not plain views; NULL when 0). */
rp_status rp_st_compose_new(const char *path, int cap, size_t own_bytes, rp_st_file **out, rp_error *err);
/* Appends tensor name (copied) whose ndim/shape/dtype describe data (not copied: it must
 * live as long as f, i.e. in f->map or in a part). */
rp_status rp_st_compose_add(rp_st_file *f, const char *name, rp_dtype dtype, int ndim, const int64_t *shape,
                            const void *data, rp_error *err);
/* f takes ownership of part (closed with f). */
rp_status rp_st_compose_part(rp_st_file *f, rp_st_file *part, rp_error *err);
/* Copies src's metadata entries whose keys f does not have yet. */
rp_status rp_st_compose_meta(rp_st_file *f, const rp_st_file *src, rp_error *err);
/* Sorts tensors and metadata by name; a name added twice is an error naming it. */
rp_status rp_st_compose_finish(rp_st_file *f, rp_error *err);

#endif
