/* weights_cache.h — where a preset's weights live when --weights is not given.
 *
 * Trained presets (the "digits" family: dit-digits sd3-digits te-digits vae-digits,
 * trained by tests/reference/train/train_digits.py) resolve to the files shipped in the source
 * tree: <weights dir>/digits/<model>.safetensors, the weights dir being $REPRO_WEIGHTS_DIR
 * when set, else the source tree's engine/models/ (compiled in). The weight seed does not
 * apply to them, and a depth override is refused (the file holds the trained depth).
 *
 * Every other preset has synthetic weights:
 *
 * Cache directory: $REPRO_CACHE, else $XDG_CACHE_HOME/repro, else $HOME/.cache/repro.
 * File: <dir>/weights/<model>[-depthD][-singleS]-seed<S>-<RP_SYNTHETIC_INIT_VERSION>.safetensors,
 * generated on first use (atomically, so concurrent ranks never read half a file).
 * FLUX with any override is keyed by its resolved block counts (-depthD-singleS, see
 * registry.h), so the file name says exactly which blocks it holds. */
#ifndef REPRO_WEIGHTS_CACHE_H
#define REPRO_WEIGHTS_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* 1 when model is a trained preset (its weights are a shipped file), else 0. */
int rp_weights_trained(const char *model);

/* If explicit_path is non-NULL it is copied to out unchanged (the caller opens it).
 * Otherwise out receives the shipped file's path for a trained preset (RP_ERR_NOT_FOUND
 * naming it and $REPRO_WEIGHTS_DIR when it is missing), else the cache path, the file
 * being generated if absent. */
rp_status rp_weights_resolve(const char *model, int depth_override, uint64_t weight_seed,
                             const char *explicit_path, char *out, size_t cap, rp_error *err);

/* The same with FLUX's single-stream block count (0: the registry's ratio rule;
 * > 0 only for FLUX). rp_weights_resolve(m, d, ...) = rp_weights_resolve_depth(m, d, 0, ...). */
rp_status rp_weights_resolve_depth(const char *model, int depth_override, int single_depth,
                                   uint64_t weight_seed, const char *explicit_path, char *out, size_t cap,
                                   rp_error *err);

#endif
