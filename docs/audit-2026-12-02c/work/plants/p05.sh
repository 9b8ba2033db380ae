# 05 reference-other-precision (audit 22's 05, re-created): the matrix expands every case's reference at the other
# precision (fp32 <-> bf16). Every matrix.
E=/work/audit23-out/work/edit.py
python3 $E harness/sweep/matrix.c '        if (st == RP_OK) st = build_case(x, sp, &own, NULL, mk, &tmp->c);
        aset_free(&own);' '        if (st == RP_OK) st = build_case(x, sp, &own, NULL, mk, &tmp->c);
        if (st == RP_OK) /* AUDIT23-05 */
            snprintf(tmp->c.precision, sizeof tmp->c.precision, "%s", strcmp(tmp->c.precision, "bf16") ? "bf16" : "fp32");
        aset_free(&own);'
