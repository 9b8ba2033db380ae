import json, glob, os, sys
# summA.py ROOT... : Part A, per case: verdict, largest ratio, the decoder evidence (decode, decode.own_arithmetic,
# decode_fp32_shadow: max level, largest changed fraction), and any "calibration" text anywhere in classification.json
def strs(o):
    if isinstance(o, dict):
        for v in o.values(): yield from strs(v)
    elif isinstance(o, list):
        for v in o: yield from strs(v)
    elif isinstance(o, str): yield o
def dec(e):
    if not isinstance(e, dict) or 'items' not in e: return '-'
    it = e['items']
    return 'max %s lvl, changed <= %.3g%% (%d items)' % (max(i.get('max_abs', 0) for i in it),
                                                        100 * max(i.get('changed', 0) for i in it), len(it))
print('| set | family | prec | case | verdict | largest ratio | decode (rule) | own decode | decode_fp32_shadow | calibration note |')
print('|---|---|---|---|---|---|---|---|---|---|')
for root in sys.argv[1:]:
    for f in sorted(glob.glob(root + '/*/*/classification.json')):
        d = json.load(open(f)); cj = json.load(open(os.path.dirname(f) + '/case.json'))
        name = cj.get('name') or 'REF'
        if name.startswith('ref'): continue
        sw = f.split('/')[-3]; prec = root.rstrip('/').split('-')[-1]
        ev = d.get('evidence', {}); de = ev.get('decode', {})
        cal = [s for s in strs(d) if 'calibration' in s]
        lr = d.get('largest_ratio'); lr = '%.3g' % lr if isinstance(lr, (int, float)) else '-'
        print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (sw.split('-')[1], sw.split('-')[2], prec, name,
              d['verdict'], lr, dec(de) + ' (' + str(de.get('rule', '-'))[:30] + ')', dec(de.get('own_arithmetic')),
              dec(ev.get('decode_fp32_shadow')), ('YES: ' + cal[0][:150]) if cal else '-'))
