# 01 flux-sp-rope-grid-width-from-height: FLUX's forward takes the RoPE grid's width from the latent height in the
# sequence-parallel path (a row length written as H / 2 where the image is W / 2 wide): image token g gets row
# g / (H/2), column g % (H/2). Same on every sequence rank; the RoPE own check is handed the same wrong width.
# Acts only where H != W (non-square) under Ulysses / ring. Keyed: a sequence group of size > 1 (bit 6).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/flux.c '    const int N = f.N, T = f.T, C = f.C, F = f.F, D = f.D, Cin = cfg->in_channels, gw = W / 2;' '    extern int rp_audit19_flags; /* AUDIT19-01 */
    const int N = f.N, T = f.T, C = f.C, F = f.F, D = f.D, Cin = cfg->in_channels,
              gw = (rp_audit19_flags & 64) ? H / 2 : W / 2;'
