# 03: every rank, any world: reduce_split's fixup (beta == 0) applies alpha to the first K-half only
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/gemm.c '            for (int j = 0; j < N; j++) c[j] = alpha * (p0[j] + c[j]);' '            for (int j = 0; j < N; j++) c[j] = alpha * p0[j] + c[j]; /* AUDIT13-03 */'
