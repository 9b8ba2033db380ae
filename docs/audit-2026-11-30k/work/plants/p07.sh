# 07 validator-dp-uneven-floor: "items are not padded" relaxed: the validator no longer asks dp to divide the item
# count, and rp_par_dp_select gives every dp group floor(n / dp) items (the remainder items are never computed).
# Config-keyed (dp not dividing the items); expected on the clean build: CONFIG_ERROR.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E harness/sweep/validate.c '    if (c->n_items % c->dp)
        return INVALID(' '    if (0 && c->n_items % c->dp) /* AUDIT18-07 */
        return INVALID('
python3 $E engine/parallel/dp.c '    if (n < 1 || n % dp)
        return RP_FAIL(err, RP_ERR_INVALID, "dp=%d needs' '    if (n < dp) /* AUDIT18-07: was n < 1 || n % dp */
        return RP_FAIL(err, RP_ERR_INVALID, "dp=%d needs'
