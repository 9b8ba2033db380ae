"""checkpoints_bfl.py IN OUT [PREFIX] — rewrites a diffusers-named FLUX safetensors file (repro's
synthetic weights) under BFL's names, as flux1-*.safetensors ship (PREFIX "model.diffusion_model."
for ComfyUI's). The inverse of diffusers' convert_flux_to_diffusers.py: q/k/v (and FLUX's single
blocks' mlp) rows stacked, norm_out's (scale, shift) halves swapped back to (shift, scale)."""
import re
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/tests/reference")
import st  # noqa: E402

src, _ = st.load(sys.argv[1])
pre = sys.argv[3] if len(sys.argv) > 3 else ""
top = {"time_text_embed.timestep_embedder.linear_1": "time_in.in_layer",
       "time_text_embed.timestep_embedder.linear_2": "time_in.out_layer",
       "time_text_embed.text_embedder.linear_1": "vector_in.in_layer",
       "time_text_embed.text_embedder.linear_2": "vector_in.out_layer",
       "time_text_embed.guidance_embedder.linear_1": "guidance_in.in_layer",
       "time_text_embed.guidance_embedder.linear_2": "guidance_in.out_layer",
       "context_embedder": "txt_in", "x_embedder": "img_in", "proj_out": "final_layer.linear"}
dbl = {"norm1.linear": "img_mod.lin", "norm1_context.linear": "txt_mod.lin", "attn.to_out.0": "img_attn.proj",
       "attn.to_add_out": "txt_attn.proj", "ff.net.0.proj": "img_mlp.0", "ff.net.2": "img_mlp.2",
       "ff_context.net.0.proj": "txt_mlp.0", "ff_context.net.2": "txt_mlp.2",
       "attn.norm_q": "img_attn.norm.query_norm", "attn.norm_k": "img_attn.norm.key_norm",
       "attn.norm_added_q": "txt_attn.norm.query_norm", "attn.norm_added_k": "txt_attn.norm.key_norm"}
sgl = {"norm.linear": "modulation.lin", "proj_out": "linear2", "attn.norm_q": "norm.query_norm",
       "attn.norm_k": "norm.key_norm"}
fused = {("transformer_blocks", "img_attn.qkv"): ["attn.to_q", "attn.to_k", "attn.to_v"],
         ("transformer_blocks", "txt_attn.qkv"): ["attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"],
         ("single_transformer_blocks", "linear1"): ["attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"]}
out = {}
for name, a in src.items():
    mod, suf = name.rsplit(".", 1)
    m = re.match(r"(transformer_blocks|single_transformer_blocks)\.(\d+)\.(.*)$", mod)
    if not m:
        if mod == "norm_out.linear":
            h = a.shape[0] // 2
            out["final_layer.adaLN_modulation.1." + suf] = np.concatenate([a[h:], a[:h]])
        else:
            out[top[mod] + "." + suf] = a
        continue
    kind, i, sub = m.groups()
    if any(sub in parts for (k, _), parts in fused.items() if k == kind):
        continue  # written with its fused tensor below
    table = dbl if kind == "transformer_blocks" else sgl
    bfl = ("double_blocks." if kind == "transformer_blocks" else "single_blocks.") + i + "." + table[sub]
    out[bfl + ("." + suf if not sub.startswith("attn.norm") else ".scale")] = a
for (kind, target), parts in fused.items():
    blocks = {int(n.split(".")[1]) for n in src if n.startswith(kind + ".")}
    for i in blocks:
        for suf in ("weight", "bias"):
            rows = [src["%s.%d.%s.%s" % (kind, i, p, suf)] for p in parts]
            b = "double_blocks" if kind == "transformer_blocks" else "single_blocks"
            out["%s.%d.%s.%s" % (b, i, target, suf)] = np.concatenate(rows)
st.save(sys.argv[2], {pre + k: v for k, v in out.items()})
