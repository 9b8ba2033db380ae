# 02: DPM-Solver++(2M), the last rank of a multi-rank layout: lambda evaluated in float
. /work/main/docs/audit-2026-11-30f/work/plants/flags.sh
python3 $E engine/samplers/samplers.c 'static double lambda_of(double abar) { return 0.5 * log(abar / (1.0 - abar)); }' 'static double lambda_of(double abar) {
    if (rp_audit13_flags & 1) { /* AUDIT13-02 */
        const float a = (float)abar;
        return (double)(0.5f * logf(a / (1.0f - a)));
    }
    return 0.5 * log(abar / (1.0 - abar));
}'
