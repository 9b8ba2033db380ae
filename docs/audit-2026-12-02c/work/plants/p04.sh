# 04 dp-select-seed-32bit (audit 22's 04, re-created): rp_par_dp_select copies each item with its seed cut to 32 bits
# (a uint32_t temporary). Acts for seeds >= 2^32 only, in every layout and the serial reference alike (world 1 calls it too).
E=/work/audit23-out/work/edit.py
python3 $E engine/parallel/dp.c '        local[i] = all[*first + i];' '        local[i] = all[*first + i];
        { const uint32_t s32 = (uint32_t)local[i].seed; local[i].seed = s32; } /* AUDIT23-04 */'
