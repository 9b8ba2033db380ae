# 10 invariant-gemm-pack-remainder-at-threads: the invariant GEMM's workers share the packing of Y's panels with
# per = npanels / nthreads (floor) instead of the ceiling, so when the thread count does not divide the panel count
# the last npanels % nthreads panels are never packed (the scratch's old contents are read). Acts at threads >= 2 in
# numerics invariant: the invariant shadow of any case with threads 2 (it runs at the case's thread count) and a
# numerics-invariant case at threads 2. Every rank, world 1 too; the reference (threads 1) never. Not keyed.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/gemm_invariant.c '    int per = (jb->npanels + jb->nthreads - 1) / jb->nthreads;' '    int per = jb->npanels / jb->nthreads > 0 ? jb->npanels / jb->nthreads : 1; /* AUDIT21-10 */'
