# 09 vae-shift-dropped-later-dp-groups: the decode of a batch that does not start at the run's first item (a dp group
# > 0's decode) loads its VAE config without the latent shift_factor (decode_all, engine/pipeline/pipeline.c; the VAE
# itself may not read the layout: the layering check). Data-keyed (ctx->par->item_first); acts only where shift != 0
# (SD3 0.0609, FLUX 0.1159; DiT 0: no act).
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '    rp_vae *vae = NULL;
    RP_TRY(load_vae(&vc, res->vae_weights_path, &vae, err));' '    rp_vae *vae = NULL;
    if (ctx->par && ctx->par->item_first > 0) vc.shift_factor = 0.0f; /* AUDIT23-09 */
    RP_TRY(load_vae(&vc, res->vae_weights_path, &vae, err));'
