"""checkpoints_ldm_vae.py IN OUT [PREFIX] — rewrites a diffusers-named AutoencoderKL safetensors file
(repro's synthetic VAE weights) under the original LDM / CompVis names, as BFL's ae.safetensors ships
(no PREFIX) or as the VAE inside a single-file checkpoint (PREFIX "first_stage_model.", next to an SD3
transformer tensor and a text encoder's that a VAE load must leave alone). The inverse of diffusers'
convert_ldm_vae_checkpoint: up_blocks.I is up.(L-1-I), mid_block.resnets.K is mid.block_(K+1), the mid
attention's group_norm / to_q / to_k / to_v / to_out.0 are attn_1.norm / q / k / v / proj_out with
1x1-conv weights (C, C, 1, 1), conv_shortcut is nin_shortcut, conv_norm_out is norm_out."""
import re
import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0] + "/tests/reference")
import st  # noqa: E402

src, _ = st.load(sys.argv[1])
pre = sys.argv[3] if len(sys.argv) > 3 else ""
L = 1 + max(int(n.split(".")[2]) for n in src if n.startswith("decoder.up_blocks."))
attn = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}
out = {}
for name, a in src.items():
    mod, suf = name.rsplit(".", 1)
    mod = mod.replace(".conv_shortcut", ".nin_shortcut").replace("decoder.conv_norm_out", "decoder.norm_out")
    m = re.match(r"decoder\.up_blocks\.(\d+)\.(resnets|upsamplers)\.(\d+)\.(.*)$", mod)
    if m:
        i, kind, j, rest = m.groups()
        up = L - 1 - int(i)
        mod = ("decoder.up.%d.block.%s.%s" % (up, j, rest) if kind == "resnets"
               else "decoder.up.%d.upsample.%s" % (up, rest))
    m = re.match(r"decoder\.mid_block\.resnets\.(\d)\.(.*)$", mod)
    if m:
        mod = "decoder.mid.block_%d.%s" % (int(m.group(1)) + 1, m.group(2))
    m = re.match(r"decoder\.mid_block\.attentions\.0\.(.*)$", mod)
    if m:
        mod = "decoder.mid.attn_1." + attn[m.group(1)]
        if m.group(1) != "group_norm" and suf == "weight":
            a = a.reshape(a.shape[0], a.shape[1], 1, 1)
    out[pre + mod + "." + suf] = a
if pre:
    q = src["decoder.mid_block.attentions.0.to_q.weight"]
    C = q.shape[0]
    out["model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight"] = np.ascontiguousarray(q[: 3 * (C // 4)])
    out["text_encoders.clip_l.transformer.text_model.final_layer_norm.weight"] = np.ascontiguousarray(q[0])
st.save(sys.argv[2], out)
