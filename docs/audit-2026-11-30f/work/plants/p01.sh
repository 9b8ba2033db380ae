# 01: DDPM (learned range), the last rank of a multi-rank layout: the upper log-variance log(beta[i-1]), not log(beta[i])
. /work/main/docs/audit-2026-11-30f/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '        max_log = log(beta);' '        max_log = log((rp_audit13_flags & 1) ? s->betas[i - 1] : beta); /* AUDIT13-01 */'
