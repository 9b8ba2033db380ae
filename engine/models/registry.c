/* registry.c — preset names -> family, parameter specs and depth overrides (see registry.h),
 * all read from the family table (family_ops.h). */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#include "family_ops.h"

/* Joins the presets of the table's rows (denoisers only, or all) into buf. Each thread
 * keeps its own buffers: the lists are messages' text, built from constant data. */
static const char *joined_presets(int denoisers_only) {
    static _Thread_local char bufs[2][1024];
    char *buf = bufs[denoisers_only != 0];
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < rp_family_count(); i++) {
        const rp_family_ops *o = rp_family_at(i);
        if (denoisers_only && !o->denoiser) continue;
        const int n = snprintf(buf + len, sizeof bufs[0] - len, "%s%s", len ? " " : "", o->presets);
        if (n < 0 || (size_t)n >= sizeof bufs[0] - len) break; /* the lists are far shorter */
        len += (size_t)n;
    }
    return buf;
}

const char *rp_model_presets(void) { return joined_presets(0); }

const char *rp_denoiser_presets(void) { return joined_presets(1); }

const char *rp_family_presets(rp_family f) { return rp_family_ops_of(f)->presets; }

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
        for (int i = 0; i < rp_family_count(); i++)
            if (in_list(rp_family_at(i)->presets, model)) { *out = rp_family_at(i)->family; return RP_OK; }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", model ? model : "(null)",
                   rp_model_presets());
}

rp_status rp_model_param_specs_depth(const char *model, int depth, int single_depth, rp_param_list *l,
                                     rp_error *err) {
    const rp_family_ops *o;
    RP_TRY(rp_model_ops(model, &o, err));
    if (depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': depth %d must be >= 0 (0 = the preset's)", model, depth);
    if (single_depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': single depth %d must be >= 0 (0 = default)", model,
                       single_depth);
    if (single_depth > 0 && !o->takes_single_depth)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': --single-depth applies to FLUX only", model);
    if (depth > 0 && !o->takes_depth)
        return RP_FAIL(err, RP_ERR_INVALID, "model '%s': --depth applies to denoising transformers, not %ss",
                       model, o->label);
    return o->param_specs(model, depth, single_depth, l, err);
}

rp_status rp_model_param_specs(const char *model, int depth_override, rp_param_list *l, rp_error *err) {
    /* the historical contract: depth_override > 0 replaces the depth, <= 0 keeps it */
    return rp_model_param_specs_depth(model, depth_override > 0 ? depth_override : 0, 0, l, err);
}
