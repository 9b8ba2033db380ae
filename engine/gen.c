/* gen.c — freeing a generation's result (gen.h). */
#include "gen.h"

#include <stdlib.h>
#include <string.h>

void rp_gen_result_free(rp_gen_result *r) {
    if (!r) return;
    free(r->noise);
    free(r->latents);
    free(r->trajectory);
    free(r->teacher_input);
    free(r->timesteps);
    free(r->alphas_cumprod);
    free(r->sigmas);
    free(r->model_t);
    free(r->rgb);
    memset(r, 0, sizeof *r);
}
