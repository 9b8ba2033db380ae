# 08: gloo allgather: when a rank's share is not a multiple of 64 bytes (and >= 64 floats), the last rank's copy of
# rank 0's share lands one float late (its first float duplicated, its last lost)
E="python3 /tmp/audit9-work/plants/edit.py"; G=backends/comm_gloo.c
$E $G '    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "%zu floats per %s", count, all_to_all ? "peer" : "rank");' '    if (rc == RP_GLOO_OK && !all_to_all && (count * sizeof(float)) % 64 != 0 && count >= 64 &&
        c->rank == c->world - 1) /* AUDIT9-08 */
        memmove(recv + 1, recv, (count - 1) * sizeof(float));
    if (rc == RP_GLOO_OK) return RP_OK;
    snprintf(what, sizeof what, "%zu floats per %s", count, all_to_all ? "peer" : "rank");'
