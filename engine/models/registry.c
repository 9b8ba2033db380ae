#include "registry.h"

#include <string.h>

#include "../vae/vae.h"
#include "dit.h"

static const char *DIT_PRESETS[] = {"dit-tiny", "dit-xl-2-256", "dit-xl-2-512"};
static const char *VAE_PRESETS[] = {"vae-tiny", "sd-vae"};

const char *rp_model_presets(void) { return "dit-tiny dit-xl-2-256 dit-xl-2-512 vae-tiny sd-vae"; }

rp_status rp_model_family(const char *model, rp_family *out, rp_error *err) {
    for (size_t i = 0; i < sizeof DIT_PRESETS / sizeof *DIT_PRESETS; i++)
        if (!strcmp(model, DIT_PRESETS[i])) { *out = RP_FAMILY_DIT; return RP_OK; }
    for (size_t i = 0; i < sizeof VAE_PRESETS / sizeof *VAE_PRESETS; i++)
        if (!strcmp(model, VAE_PRESETS[i])) { *out = RP_FAMILY_VAE; return RP_OK; }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", model, rp_model_presets());
}

rp_status rp_model_param_specs(const char *model, int depth_override, rp_param_list *l, rp_error *err) {
    rp_family fam;
    RP_TRY(rp_model_family(model, &fam, err));
    if (fam == RP_FAMILY_DIT) {
        rp_dit_config cfg;
        RP_TRY(rp_dit_preset(model, &cfg, err));
        if (depth_override > 0) cfg.depth = depth_override;
        rp_dit_param_specs(&cfg, l);
    } else {
        if (depth_override > 0)
            return RP_FAIL(err, RP_ERR_INVALID, "model '%s': --depth applies to transformers, not VAEs", model);
        rp_vae_config cfg;
        RP_TRY(rp_vae_preset(model, &cfg, err));
        rp_vae_param_specs(&cfg, l);
    }
    return RP_OK;
}
