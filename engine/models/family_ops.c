/* family_ops.c — the family table (family_ops.h): one row per rp_family, in the order
 * presets are listed and looked up; the VAE's and text encoder's rows (presets and specs). */
#include "family_ops.h"

#include <assert.h>

#include "../vae/vae.h"
#include "registry.h"
#include "text_encoder.h"

/* The denoisers' rows, at the end of their model files. */
extern const rp_family_ops rp_dit_family, rp_sd3_family, rp_flux_family;

static rp_status te_ops_specs(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err) {
    rp_te_config c;
    (void)depth, (void)single_depth; /* refused by the registry: no overrides */
    RP_TRY(rp_te_preset(model, &c, err));
    rp_te_param_specs(&c, l);
    return RP_OK;
}

static rp_status vae_ops_specs(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err) {
    rp_vae_config c;
    (void)depth, (void)single_depth;
    RP_TRY(rp_vae_preset(model, &c, err));
    rp_vae_param_specs(&c, l);
    return RP_OK;
}

static const rp_family_ops TE_FAMILY = {
    .family = RP_FAMILY_TEXT_ENCODER, .label = "text encoder", .presets = "te-tiny te-digits te-sd3 te-flux",
    .param_specs = te_ops_specs,
};

static const rp_family_ops VAE_FAMILY = {
    .family = RP_FAMILY_VAE, .label = "VAE", .presets = "vae-tiny vae-mini vae-digits sd-vae vae-tiny-16 vae-mini-16 sd3-vae flux-vae",
    .param_specs = vae_ops_specs,
};

/* The order of every listing (rp_model_presets, the CLI's messages) and of lookups. */
static const rp_family_ops *const FAMILIES[] = {&rp_dit_family, &rp_sd3_family, &rp_flux_family, &TE_FAMILY,
                                                &VAE_FAMILY};
#define N_FAMILIES ((int)(sizeof FAMILIES / sizeof *FAMILIES))

int rp_family_count(void) { return N_FAMILIES; }

const rp_family_ops *rp_family_at(int i) {
    assert(i >= 0 && i < N_FAMILIES);
    return FAMILIES[i];
}

const rp_family_ops *rp_family_ops_of(rp_family f) {
    for (int i = 0; i < N_FAMILIES; i++)
        if (FAMILIES[i]->family == f) return FAMILIES[i];
    assert(!"every rp_family has a row");
    return NULL;
}

rp_status rp_model_ops(const char *model, const rp_family_ops **out, rp_error *err) {
    rp_family f;
    RP_TRY(rp_model_family(model, &f, err));
    *out = rp_family_ops_of(f);
    return RP_OK;
}
