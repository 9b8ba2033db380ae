# 02 subquad-last-qchunk-row-early: sub-quadratic attention's last query chunk, when partial (n < q_chunk), reads
# its queries from one row early (i0 - 1): the chunk's rows duplicate the previous row's query and the last query
# row is dropped. Acts with attention: subquad, kv_chunk < Tk (the chunked path) and q_chunk not dividing Tq.
# Every rank, world 1 too. Not keyed to the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/attention/subquad.c '                const float *qc = bh.q + (size_t)i0 * D;   /* (n, D) */' '                const float *qc = bh.q + (size_t)(n < rows ? i0 - 1 : i0) * D;   /* (n, D) AUDIT21-02 */'
