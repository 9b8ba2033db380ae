# 09 dp-select-class-from-batch-head: rp_par_dp_select copies each local item from all[first + i] but then takes
# its DiT class from all[i] (the run's head): every group but the first gets the first group's classes (seed and
# prompt right). Acts only where the items' classes differ across dp groups. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/parallel/dp.c '        local[i] = all[*first + i];' '        local[i] = all[*first + i];
        { extern int rp_audit19_flags; if (rp_audit19_flags & 128) local[i].class_id = all[i].class_id; } /* AUDIT19-09 */'
