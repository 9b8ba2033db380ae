/* family.h — the model families and their names (which code runs a preset:
 * engine/models/registry.h maps preset names to them). In the engine's core, so that code
 * that only tells families apart (the fault registry, validation hooks, gen.h's result)
 * does not depend on every model's configuration. */
#ifndef REPRO_MODEL_FAMILY_H
#define REPRO_MODEL_FAMILY_H

typedef enum rp_family {
    RP_FAMILY_DIT = 0,
    RP_FAMILY_VAE,
    RP_FAMILY_SD3,
    RP_FAMILY_FLUX,
    RP_FAMILY_TEXT_ENCODER
} rp_family;

/* "dit", "vae", "sd3", "flux", "text-encoder" (messages, `repro weights`). */
static inline const char *rp_family_name(rp_family f) {
    static const char *const names[] = {"dit", "vae", "sd3", "flux", "text-encoder"};
    return (unsigned)f < sizeof names / sizeof *names ? names[f] : "unknown";
}

#endif
