/* family.h — the model families (which code runs a preset: engine/models/registry.h maps
 * names to them). Its own header so that code that only tells families apart (the fault
 * registry, validation hooks) does not depend on every model's configuration. */
#ifndef REPRO_MODEL_FAMILY_H
#define REPRO_MODEL_FAMILY_H

typedef enum rp_family {
    RP_FAMILY_DIT = 0,
    RP_FAMILY_VAE,
    RP_FAMILY_SD3,
    RP_FAMILY_FLUX,
    RP_FAMILY_TEXT_ENCODER
} rp_family;

#endif
