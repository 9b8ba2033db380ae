import json, sys, glob, os, subprocess, struct
# acted2.py PLANTDIR CLEANDIR : audit 10's acted.py (by path), and for a case whose own results are the clean
# build's, whether any of its other runs' latents differ (shadow/*/teacher.safetensors, invariant/, self/: the
# fp32 shadow, the invariant shadow, the self check). Such a case's line says "latents same; SHADOW DIFFERS: ..."
# (audit 11's table() reads 'DIFFER' there as acted).
# Audit 19 added: and for such a case whose teacher-forced run's files (teacher/) differ from the clean build's, "latents
# same; TEACHER DIFFERS" (07: rank 1's wrong negative text is used only in the rotated layout; 09: the branch ran
# only in the worker's later calls).
A = '/work/audit23-out/work/acted.py'
def tens(f):
    b = open(f, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop('__metadata__', None)
    return {k: b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]] for k, v in h.items()}
def idx(root):
    d = {}
    for cd in glob.glob(root + '/*/*/'):
        try: cj = json.load(open(cd + 'case.json'))
        except Exception: continue
        d[(cd.split('/')[-3], cj.get('name') or 'REF')] = cd
    return d
P, C = idx(sys.argv[1]), idx(sys.argv[2])
for l in subprocess.run(['/usr/bin/python3', A] + sys.argv[1:3], capture_output=True, text=True).stdout.splitlines():
    f = [x.strip() for x in l.split('|')]
    if 'DIFFER' not in f[2] and f[3] == 'images differ: -' and (f[0], f[1]) in P:
        p, c = P[(f[0], f[1])], C[(f[0], f[1])]
        dif = []
        for g in sorted(glob.glob(p + '**/teacher.safetensors', recursive=True)):
            r = os.path.relpath(g, p)
            if r.startswith('teacher/'): continue
            cg = c + r
            if os.path.exists(cg) and tens(g) != tens(cg): dif.append(os.path.dirname(r))
        if dif: f[2] = 'latents same; SHADOW DIFFERS: ' + ','.join(dif)
        elif f[4] != 'teacher files differ: -': f[2] = 'latents same; TEACHER DIFFERS'
    print(' | '.join(f))
