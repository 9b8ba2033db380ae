/* sharpen.h — the sharpened variant of a model: every attention projection's weights
 * (q, k and v) times an integer factor s, so the attention logits grow by s^2.
 *
 * Why: the synthetic weights are contractive, so a rounding difference dies out within a
 * few steps; trained models are not, mostly because their attention is sharp (a tiny
 * change of a logit moves which keys win). The sharpened variant has that sensitivity,
 * and the classifier is calibrated on it (docs/classification.md). A case field
 * (`sharpen: s`) and `repro generate --sharpen s`; 0 (the default) is off. */
#ifndef REPRO_SHARPEN_H
#define REPRO_SHARPEN_H

#include <stdint.h>

#include "error.h"
#include "safetensors.h"

#define RP_SHARPEN_MAX 64

/* Multiplies, in f's in-memory copy, every F32 tensor named *attn.qkv.weight,
 * *attn.to_{q,k,v}.weight or *attn.add_{q,k,v}_proj.weight by factor (exact: a float
 * times a small integer rounds once). factor 0 or 1: nothing. Errors: a factor outside
 * 0..RP_SHARPEN_MAX, a matching tensor that is not F32, or none matching. */
rp_status rp_weights_sharpen(rp_st_file *f, int factor, rp_error *err);

#endif
