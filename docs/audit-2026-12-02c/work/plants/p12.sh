# 12 pipeline-patches-ignored-with-dp: rp_case_pipeline_patches (harness/case/case.c, read by the worker, the validator
# and the classifier) ignores num_pipeline_patch when the case also has dp > 1 (one patch per stage). Layout-keyed.
E=/work/audit23-out/work/edit.py
python3 $E harness/case/case.c '    if (c->pipefusion > 1) return c->num_pipeline_patch ? c->num_pipeline_patch : c->pipefusion;' '    if (c->pipefusion > 1) return c->num_pipeline_patch && c->dp == 1 ? c->num_pipeline_patch : c->pipefusion; /* AUDIT23-12 */'
