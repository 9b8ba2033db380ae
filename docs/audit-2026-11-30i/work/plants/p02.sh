# 02 dit-null-class-row-cfg1: DiT y_embedder on cfg rank 1: the null class (y == num_classes) reads row
# num_classes - 1 (the last real class) instead of num_classes; any precision
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/models/dit.c '    for (int b = 0; b < B; b++) rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)y[b] * C, (size_t)C);' '    { extern int rp_audit16_flags; /* AUDIT16-02 */
    for (int b = 0; b < B; b++) rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)(y[b] - ((rp_audit16_flags & 8) && y[b] == cfg->num_classes)) * C, (size_t)C); }'
