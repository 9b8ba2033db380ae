# 08 teacher-rows-next-group (audit 22's 08, re-created): the harness loads a dp group's teacher rows from the next
# group's items ((first + count) mod n: at dp 1 that is 0, right).
E=/work/audit23-out/work/edit.py
python3 $E harness/worker/job_case.c '        memcpy(*out + (size_t)k * count * per, all + ((size_t)k * n_all + first) * per, sizeof(float) * count * per);' '        memcpy(*out + (size_t)k * count * per, all + ((size_t)k * n_all + (first + count) % n_all) * per, /* AUDIT23-08 */
               sizeof(float) * count * per);'
