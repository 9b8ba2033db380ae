# 0306c: 03 and 06c together (does 03's broken reduce-split twin mask 06c in another case?)
bash /work/main/docs/audit-2026-11-30f/work/plants/p03.sh && bash /work/main/docs/audit-2026-11-30f/work/plants/p06c.sh
