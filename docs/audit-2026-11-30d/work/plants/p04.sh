# 04: dp gather: rank 0 swaps two values (floats 5 and 6) of the last group's second item's final latents
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/parallel/dp.c '            if (st == RP_OK) st = c->ops->recv(c, all->latents + off * per, sizeof(float) * B * per, from, TAG_GATHER, err);' '            if (st == RP_OK) st = c->ops->recv(c, all->latents + off * per, sizeof(float) * B * per, from, TAG_GATHER, err);
            if (st == RP_OK && g == dp - 1 && B >= 2 && per > 6) { /* AUDIT11-04 */
                float *it = all->latents + (off + 1) * per, t = it[5];
                it[5] = it[6];
                it[6] = t;
            }'
