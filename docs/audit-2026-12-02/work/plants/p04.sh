# 04 dp4-middle-groups-seed-from-previous-group: rp_par_dp_select gives a middle dp group (0 < g < dp - 1, so only
# at dp >= 3) the seeds of the previous group's items (its global_index, class and prompt stay its own). Every rank
# of those groups. Runs before rp_generate, so keyed by the degree directly (not the layout flags).
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/dp.c '        local[i] = all[*first + i];' '        local[i] = all[*first + i];
        if (dp > 2 && g > 0 && g < dp - 1) local[i].seed = all[(g - 1) * per + i].seed; /* AUDIT21-04 */'
