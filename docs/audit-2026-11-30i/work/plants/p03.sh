# 03 noise-std-normalise-bf16-lastdp: the last dp group of a bf16 layout divides each item's initial noise by its
# sample std (about the mean), in double
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '    rp_par_noise_fault(ctx, noise, (size_t)B * per);' '    { extern int rp_audit16_flags; /* AUDIT16-03 */
    if ((rp_audit16_flags & 34) == 34)
        for (int b = 0; b < B; b++) {
            float *z = noise + (size_t)b * per; double s1 = 0, s2 = 0;
            for (size_t i = 0; i < per; i++) { s1 += z[i]; s2 += (double)z[i] * z[i]; }
            const double mu = s1 / per, sd = sqrt(s2 / per - mu * mu);
            for (size_t i = 0; i < per; i++) z[i] = (float)(z[i] / sd);
        } }
    rp_par_noise_fault(ctx, noise, (size_t)B * per);'
grep -q '<math.h>' engine/pipeline/pipeline.c || sed -i '0,/#include </s//#include <math.h>\n#include </' engine/pipeline/pipeline.c
