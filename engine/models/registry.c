/* registry.c — preset names -> family, parameter specs and depth overrides (see registry.h). */
#include "registry.h"

#include <string.h>

#include "../vae/vae.h"
#include "dit.h"
#include "flux.h"
#include "sd3.h"
#include "text_encoder.h"

typedef struct family_presets {
    rp_family family;
    const char *list;   /* space-separated presets */
} family_presets;

/* The single table of names: rp_model_family parses the lists, so a preset added
 * here is known everywhere (CLI messages, weights cache, `repro weights`). */
#define DIT_PRESETS "dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 dit-xl-2-512"
#define SD3_PRESETS "sd3-tiny sd3-digits sd3-medium sd3.5-large sd3.5-medium sd3.5-medium-tiny"
#define FLUX_PRESETS "flux-tiny flux-dev flux-schnell flux-tiny-schnell"
#define TE_PRESETS "te-tiny te-digits te-sd3 te-flux"
#define VAE_PRESETS "vae-tiny vae-digits sd-vae vae-tiny-16 sd3-vae flux-vae"
static const family_presets FAMILIES[] = {
    {RP_FAMILY_DIT, DIT_PRESETS},
    {RP_FAMILY_SD3, SD3_PRESETS},
    {RP_FAMILY_FLUX, FLUX_PRESETS},
    {RP_FAMILY_TEXT_ENCODER, TE_PRESETS},
    {RP_FAMILY_VAE, VAE_PRESETS},
};
#define N_FAMILIES (sizeof FAMILIES / sizeof *FAMILIES)

const char *rp_model_presets(void) {
    return DIT_PRESETS " " SD3_PRESETS " " FLUX_PRESETS " " TE_PRESETS " " VAE_PRESETS;
}

const char *rp_family_presets(rp_family f) {
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (FAMILIES[i].family == f) return FAMILIES[i].list;
    return "";
}

/* 1 when `name` is one of the space-separated words of `list`. */
static int in_list(const char *list, const char *name) {
    const size_t n = strlen(name);
    if (!n) return 0;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ' ');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

rp_status rp_model_family(const char *model, rp_family *out, rp_error *err) {
    if (model)
        for (size_t i = 0; i < N_FAMILIES; i++)
            if (in_list(FAMILIES[i].list, model)) { *out = FAMILIES[i].family; return RP_OK; }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", model ? model : "(null)",
                   rp_model_presets());
}

rp_status rp_model_flux_depth(rp_flux_config *cfg, int depth, int single_depth, rp_error *err) {
    if (depth < 0 || single_depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': depth %d and single depth %d must be >= 0 (0 = default)",
                       cfg->preset, depth, single_depth);
    if (depth > cfg->n_double)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': --depth %d exceeds the preset's %d double blocks",
                       cfg->preset, depth, cfg->n_double);
    int nd = depth > 0 ? depth : -1, ns = single_depth > 0 ? single_depth : -1;
    if (depth > 0 && single_depth == 0 && cfg->n_double > 0) /* keep the preset's single:double ratio */
        ns = (2 * depth * cfg->n_single + cfg->n_double) / (2 * cfg->n_double);
    if (ns > cfg->n_single)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': --single-depth %d exceeds the preset's %d single blocks",
                       cfg->preset, ns, cfg->n_single);
    return rp_flux_set_depth(cfg, nd, ns, err);
}

rp_status rp_model_param_specs_depth(const char *model, int depth, int single_depth, rp_param_list *l,
                                     rp_error *err) {
    rp_family fam;
    RP_TRY(rp_model_family(model, &fam, err));
    if (depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': depth %d must be >= 0 (0 = the preset's)", model, depth);
    if (single_depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': single depth %d must be >= 0 (0 = default)", model,
                       single_depth);
    if (single_depth > 0 && fam != RP_FAMILY_FLUX)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': --single-depth applies to FLUX only", model);
    if (depth > 0 && (fam == RP_FAMILY_VAE || fam == RP_FAMILY_TEXT_ENCODER))
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': --depth applies to denoising transformers, not %ss",
                       model, fam == RP_FAMILY_VAE ? "VAE" : "text encoder");
    switch (fam) {
    case RP_FAMILY_DIT: {
        rp_dit_config cfg;
        RP_TRY(rp_dit_preset(model, &cfg, err));
        if (depth > 0) cfg.depth = depth;
        rp_dit_param_specs(&cfg, l);
        break;
    }
    case RP_FAMILY_SD3: {
        rp_sd3_config cfg;
        RP_TRY(rp_sd3_preset(model, &cfg, err));
        if (depth > 0) cfg.depth = depth;
        rp_sd3_param_specs(&cfg, l);
        break;
    }
    case RP_FAMILY_FLUX: {
        rp_flux_config cfg;
        RP_TRY(rp_flux_preset(model, &cfg, err));
        RP_TRY(rp_model_flux_depth(&cfg, depth, single_depth, err));
        rp_flux_param_specs(&cfg, l);
        break;
    }
    case RP_FAMILY_TEXT_ENCODER: {
        rp_te_config cfg;
        RP_TRY(rp_te_preset(model, &cfg, err));
        rp_te_param_specs(&cfg, l);
        break;
    }
    case RP_FAMILY_VAE: {
        rp_vae_config cfg;
        RP_TRY(rp_vae_preset(model, &cfg, err));
        rp_vae_param_specs(&cfg, l);
        break;
    }
    }
    return RP_OK;
}

rp_status rp_model_param_specs(const char *model, int depth_override, rp_param_list *l, rp_error *err) {
    /* the historical contract: depth_override > 0 replaces the depth, <= 0 keeps it */
    return rp_model_param_specs_depth(model, depth_override > 0 ? depth_override : 0, 0, l, err);
}
