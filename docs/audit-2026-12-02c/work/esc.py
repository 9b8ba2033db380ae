import json, glob, sys, os
# esc.py PLANTRUN CLEANRUN SET NAME... : for each case, the plant's and the clean build's verdict, PSNR / SSIM,
# invariant shadow, emulation, accumulated trajectory distance (the evidence an escape went through)
def find(run, st, nm):
    for cd in glob.glob(f'/work/audit23-work/r/{run}/a23-{st}/*/'):
        try:
            if json.load(open(cd + 'case.json')).get('name') == nm: return cd
        except Exception: pass
P, C, st = sys.argv[1:4]
for nm in sys.argv[4:]:
    out = []
    for run in (P, C):
        cd = find(run, st, nm)
        j = json.load(open(cd + 'classification.json')); e = j['evidence']
        a = e.get('approx') or {}
        out.append(f"{run}: {j['verdict']} psnr={a.get('psnr', float('nan')):.2f} ssim={a.get('ssim', float('nan')):.4f} "
                   f"inv={json.dumps(e.get('invariant_shadow'))} emu={json.dumps(e.get('emulation'))} "
                   f"acc={[round(x, 7) if x is not None else None for x in (e.get('accumulated') or [])]}")
    print(st, nm); [print('   ', o) for o in out]
