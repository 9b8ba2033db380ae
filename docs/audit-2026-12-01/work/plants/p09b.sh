# 09b dp-select-class-from-batch-head-world: 09 keyed on the layout itself (p->world > 1) instead of
# rp_audit19_flags: rp_par_dp_select runs in the worker BEFORE rp_generate sets the flags, so 09's branch ran only
# from the second call of a worker process (the teacher run, the leak checks), never in the case's own run.
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/parallel/dp.c '        local[i] = all[*first + i];' '        local[i] = all[*first + i];
        if (p->world > 1) local[i].class_id = all[i].class_id; /* AUDIT19-09b */'
