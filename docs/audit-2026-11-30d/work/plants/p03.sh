# 03: patch parallel: at evaluation 2 the last patch rank keeps the other bands' first row (bh 0) from the
# older exchange when it saves this step's K/V for the next step (read at step 3, two steps stale)
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/parallel/patch.c '            memcpy(e->k + (bh * T + (size_t)q * Ti) * D, ks, sizeof(float) * Ti * D);' '            const int a11 = p->fwd_eval == 2 && r == n - 1 && q != r && bh == 0; /* AUDIT11-03 */
            memcpy(e->k + (bh * T + (size_t)q * Ti + a11) * D, ks + (size_t)a11 * D, sizeof(float) * (Ti - a11) * D);'
