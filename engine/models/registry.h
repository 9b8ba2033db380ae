/* registry.h — model presets by name, across families (the names are the family table's:
 * family_ops.h; what a family does with them is its ops).
 *
 * A model name is a preset:
 *   DiT           dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 dit-xl-2-512
 *   SD3 (MMDiT)   sd3-tiny sd3-digits sd3-medium sd3.5-large · MMDiT-X: sd3.5-medium sd3.5-medium-tiny
 *   FLUX          flux-tiny flux-dev flux-schnell flux-tiny-schnell
 *   text encoder  te-tiny te-digits te-sd3 te-flux   (the prompt encoders of the SD3/FLUX pipelines)
 *   VAE           vae-tiny vae-mini vae-digits sd-vae (4 latent channels) · vae-tiny-16 vae-mini-16
 *                 sd3-vae flux-vae (16)
 * The *-digits presets are the trained family: their weights are shipped files
 * (weights_cache.h, rp_weights_trained), not synthetic; they take no depth override.
 *
 * Depth overrides (reduced-depth real-shape runs) are part of the model's identity
 * (weights cache key, result records); 0 means "the preset's" (or, for FLUX's single
 * blocks, "follow the depth"):
 *   DiT, SD3  depth > 0 replaces the block count. SD3's last block is context_pre_only,
 *             so a reduced SD3 is its own architecture (its last block's weights differ
 *             from the full model's block of that index): synthetic weights only.
 *   FLUX      depth > 0 = double-stream blocks, single_depth > 0 = single-stream blocks.
 *             Given depth alone, the single count keeps the preset's ratio:
 *             round(depth * n_single / n_double), so flux-dev (19 + 38) --depth 2 keeps
 *             2 + 4 blocks and flux-tiny (2 + 2) --depth 1 keeps 1 + 1: a reduced FLUX
 *             always has both block kinds (a zero count cannot be asked for; 0 is
 *             "default" everywhere, so a zero-initialised request means the preset).
 *             The kept blocks are the first ones under the full model's names, so a
 *             reduced FLUX loads from a full checkpoint.
 *   text encoders, VAEs: no overrides. */
#ifndef REPRO_REGISTRY_H
#define REPRO_REGISTRY_H

#include "../error.h"
#include "../params.h"
#include "../family.h"


/* Family of a preset name; RP_ERR_NOT_FOUND with the list of known presets. */
rp_status rp_model_family(const char *model, rp_family *out, rp_error *err);

/* rp_family_name: engine/family.h */
/* Appends the parameter specs of model (with depth_override; FLUX's single-stream
 * count follows the ratio rule above) to l. */
rp_status rp_model_param_specs(const char *model, int depth_override, rp_param_list *l, rp_error *err);

/* The same with FLUX's single-stream count given explicitly: single_depth > 0 keeps
 * that many single blocks, 0 applies the rule above. single_depth > 0 is an error
 * for every other family. */
rp_status rp_model_param_specs_depth(const char *model, int depth, int single_depth, rp_param_list *l,
                                     rp_error *err);

/* Space-separated list of every known preset, and of the denoisers' (DiT, SD3, FLUX), in
 * the family table's order (family_ops.h). */
const char *rp_model_presets(void);
const char *rp_denoiser_presets(void);

/* Space-separated presets of one family (e.g. "vae-tiny sd-vae vae-tiny-16 sd3-vae flux-vae"). */
const char *rp_family_presets(rp_family f);

#endif
