import json, struct, sys, math, glob
# halves.py RESDIR/MATRIX CASE LAYER [parts] : the case's e0 trace of LAYER against the reference's, rel-L2 by consecutive
# part of the (strided) trace: items in order for (B, T, C) layers (4 parts = 4 items)
def tr(f):
    b=open(f,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); h.pop('__metadata__',None)
    return {k:struct.unpack('<%df'%(v['shape'][0]),b[8+n+v['data_offsets'][0]:8+n+v['data_offsets'][1]]) for k,v in h.items()}
md, name, layer = sys.argv[1], sys.argv[2], sys.argv[3]; P=int(sys.argv[4]) if len(sys.argv)>4 else 4
cs={json.load(open(d+'case.json')).get('name') or 'REF': d for d in glob.glob(md+'/*/')}
ref=[d for k,d in cs.items() if k.startswith('ref')][0]
a=tr(cs[name]+'trace.safetensors')['e0/'+layer]; r=tr(ref+'trace.safetensors')['e0/'+layer]
n=len(a)//P
out=[]
for p in range(P):
    x=a[p*n:(p+1)*n]; y=r[p*n:(p+1)*n]
    out.append(math.sqrt(sum((u-v)**2 for u,v in zip(x,y)))/max(1e-30,math.sqrt(sum(v*v for v in y))))
print(md, name, layer, ' '.join('%.3g'%o for o in out))
