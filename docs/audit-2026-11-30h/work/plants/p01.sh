# 01 ring-rep-prevblock-lastrank: ring attention, the last ring rank, every precision: at the ring's last step the
# replicated (SD3 text) queries' partial is computed against the previous step's K/V block (the swapped-out buffer)
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/parallel/sp_attention.c '                block_partial(ctx, q + (size_t)Ts * D, k, v, Trep, Tks, D, scale, rm + o * Trep, rl + o * Trep,
                              rO + o * Trep * D, S);
            }
        }
        if (s + 1 < R)' '                const int a15 = s > 0 && s == R - 1 && ri == R - 1; /* AUDIT15-01: stale block */
                block_partial(ctx, q + (size_t)Ts * D, a15 ? next + bh * Tks * D : k, a15 ? next + blk + bh * Tks * D : v,
                              Trep, Tks, D, scale, rm + o * Trep, rl + o * Trep, rO + o * Trep * D, S);
            }
        }
        if (s + 1 < R)'
