import json, sys, glob, os, filecmp, struct
def tens(f):
    b=open(f,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); h.pop('__metadata__',None)
    return {k:b[8+n+v['data_offsets'][0]:8+n+v['data_offsets'][1]] for k,v in h.items()}
def same(a,b): return tens(a)==tens(b)
# acted.py PLANTDIR CLEANDIR : per case name, latents.safetensors / images / teacher latents equal to clean?
def idx(root):
    d={}
    for cd in glob.glob(root+'/*/*/'):
        try: cj=json.load(open(cd+'case.json'))
        except Exception: continue
        d[(cd.split('/')[-3], cj.get('name') or 'REF')]=cd
    return d
P,C=idx(sys.argv[1]),idx(sys.argv[2])
for k in sorted(P):
    if k not in C or k[1]=='REF' or k[1].startswith('ref'): continue
    p,c=P[k],C[k]
    lat=same(p+'latents.safetensors',c+'latents.safetensors') if os.path.exists(p+'latents.safetensors') else None
    imgs=[os.path.basename(f) for f in sorted(glob.glob(p+'image-*.png')) if os.path.exists(c+os.path.basename(f)) and not filecmp.cmp(f,c+os.path.basename(f),shallow=False)]
    tl=[f for f in glob.glob(p+'teacher/*.safetensors')]
    td=[os.path.basename(f) for f in tl if os.path.exists(c+'teacher/'+os.path.basename(f)) and not same(f,c+'teacher/'+os.path.basename(f))]
    print(k[0], '|', k[1], '|', 'latents same' if lat else 'LATENTS DIFFER', '| images differ:', ','.join(imgs) or '-', '| teacher files differ:', ','.join(td) or '-')
