import json, glob, sys
# ev.py RUNDIR SET NAME [keys...] : a case's verdict, first_step / first_layer and the named evidence fields (cut at 500)
run, st, nm = sys.argv[1:4]
keys = sys.argv[4:] or ['first_step', 'first_layer', 'local_errors', 'invariant_shadow', 'decode', 'decode_own',
                        'decode_fp32_shadow', 'emulation', 'approx', 'determinism', 'initial_noise', 'teacher_input']
for cd in glob.glob(f'/work/audit23-work/r/{run}/a23-{st}/*/'):
    try:
        if json.load(open(cd + 'case.json')).get('name') != nm: continue
    except Exception: continue
    c = json.load(open(cd + 'classification.json')); e = c['evidence']
    print(run, st, nm, c['verdict'], '|', c['summary'][:300])
    for k in keys:
        if k in e: print('   ', k, ':', json.dumps(e[k])[:500])
    print('    (other evidence keys:', ', '.join(k for k in e if k not in keys) + ')')
