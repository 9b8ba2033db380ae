/* registry.h — model presets by name, across families.
 *
 * A model name is a preset ("dit-tiny", "dit-xl-2-256", "vae-tiny", "sd-vae", ...).
 * depth_override > 0 replaces the preset's depth (reduced-depth real-shape runs);
 * it is part of the model's identity (weights cache key, result records). */
#ifndef REPRO_REGISTRY_H
#define REPRO_REGISTRY_H

#include "../error.h"
#include "../params.h"

typedef enum rp_family { RP_FAMILY_DIT = 0, RP_FAMILY_VAE } rp_family;

/* Family of a preset name; RP_ERR_NOT_FOUND with the list of known presets. */
rp_status rp_model_family(const char *model, rp_family *out, rp_error *err);

/* Appends the parameter specs of model (with depth_override) to l. */
rp_status rp_model_param_specs(const char *model, int depth_override, rp_param_list *l, rp_error *err);

/* Space-separated list of every known preset. */
const char *rp_model_presets(void);

#endif
