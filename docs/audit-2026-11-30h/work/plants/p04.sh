# 04 te-prompt-rotate-lastrank: the last rank of a multi-rank layout, every precision: its items' prompts are
# encoded rotated by one within its shard (item b gets item b+1's prompt)
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '        for (int b = 0; b < B; b++) prompts[b] = req->items[b].prompt ? req->items[b].prompt : "";' '        extern int rp_audit15_flags; /* AUDIT15-04 */
        for (int b = 0; b < B; b++) {
            const int s = (rp_audit15_flags & 1) ? (b + 1) % B : b;
            prompts[b] = req->items[s].prompt ? req->items[s].prompt : "";
        }'
