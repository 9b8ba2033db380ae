# 02 patch-text-kv-stale-after-warmup: after warmup, displaced patch parallelism also takes the text tokens' K/V
# rows of each attention's keys from the previous step (cached with the image bands, "the text does not move"),
# every rank alike. Acts where the keys hold text (SD3, FLUX; DiT has none). Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/patch.c '    /* The staleness contract (stale_check.c): each patch'"'"'s rows as placed' '    { /* AUDIT20-02: the text rows of the keys cached per (slot, attention) and, after warmup, the previous
       * step'"'"'s used */
        extern int rp_audit20_flags;
        static float *a20k[8][256], *a20v[8][256];
        static size_t a20n[8][256];
        const int s20 = p->fwd_slot, Tt = Tl + Tr;
        if ((rp_audit20_flags & 128) && s20 < 8 && layer < 256 && Tt > 0) {
            const size_t n20 = BH * (size_t)Tt * D;
            const int have = a20n[s20][layer] == n20;
            if (!have) {
                free(a20k[s20][layer]);
                free(a20v[s20][layer]);
                a20k[s20][layer] = malloc(sizeof(float) * n20);
                a20v[s20][layer] = malloc(sizeof(float) * n20);
                a20n[s20][layer] = n20;
            }
            float *fk = malloc(sizeof(float) * n20), *fv = malloc(sizeof(float) * n20);
            for (size_t bh = 0; bh < BH; bh++) {
                float *kd = K + bh * To * D, *vd = V + bh * To * D;
                memcpy(fk + bh * Tt * D, kd, sizeof(float) * Tl * D);
                memcpy(fv + bh * Tt * D, vd, sizeof(float) * Tl * D);
                memcpy(fk + (bh * Tt + Tl) * D, kd + (size_t)(To - Tr) * D, sizeof(float) * Tr * D);
                memcpy(fv + (bh * Tt + Tl) * D, vd + (size_t)(To - Tr) * D, sizeof(float) * Tr * D);
                if (!sync && have) {
                    memcpy(kd, a20k[s20][layer] + bh * Tt * D, sizeof(float) * Tl * D);
                    memcpy(vd, a20v[s20][layer] + bh * Tt * D, sizeof(float) * Tl * D);
                    memcpy(kd + (size_t)(To - Tr) * D, a20k[s20][layer] + (bh * Tt + Tl) * D, sizeof(float) * Tr * D);
                    memcpy(vd + (size_t)(To - Tr) * D, a20v[s20][layer] + (bh * Tt + Tl) * D, sizeof(float) * Tr * D);
                }
            }
            memcpy(a20k[s20][layer], fk, sizeof(float) * n20);
            memcpy(a20v[s20][layer], fv, sizeof(float) * n20);
            free(fk);
            free(fv);
        }
    }
    /* The staleness contract (stale_check.c): each patch'"'"'s rows as placed'
