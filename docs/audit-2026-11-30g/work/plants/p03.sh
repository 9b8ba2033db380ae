# 03: the last rank of a multi-rank layout returns its final latents one step stale (trajectory[N-1]), free run only
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '        st = rp_flow_sample_euler(&sched, &den, res->latents, n, res->trajectory, err);
    }' '        st = rp_flow_sample_euler(&sched, &den, res->latents, n, res->trajectory, err);
        extern int rp_audit14_flags; /* AUDIT14-03 */
        if (st == RP_OK && (rp_audit14_flags & 1))
            memcpy(res->latents, res->trajectory + (size_t)(N - 1) * n, sizeof(float) * n);
    }'
python3 $E engine/pipeline/pipeline.c '        st = rp_sample(&scfg, &sched, &den, &nsrc, res->latents, n, res->trajectory, res->timesteps, err);
    }' '        st = rp_sample(&scfg, &sched, &den, &nsrc, res->latents, n, res->trajectory, res->timesteps, err);
        extern int rp_audit14_flags; /* AUDIT14-03 */
        if (st == RP_OK && (rp_audit14_flags & 1))
            memcpy(res->latents, res->trajectory + (size_t)(N - 1) * n, sizeof(float) * n);
    }'
