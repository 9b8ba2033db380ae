# 17 te-pad-row-unzeroed-odd-length: the text encoder zeroes the pad rows of its context from an even row (rounded up
# from the token count, as a 2-row store would): a prompt with an odd token count (bos + bytes + eos) keeps its first pad
# row's projection. "a red fox in the snow" (23 tokens) acts, "two cats" (10) and "" (2) not. ACTS IN THE SERIAL REFERENCE
# TOO (every layout encodes each prompt alike): meant to measure a fault upstream of case and reference.
E=/work/audit23-out/work/edit.py
python3 $E engine/models/text_encoder.c '    for (int r = n; r < L; r++) memset(ctx_out + (size_t)r * Cc, 0, (size_t)Cc * sizeof(float));' '    for (int r = (n + 1) & ~1; r < L; r++) memset(ctx_out + (size_t)r * Cc, 0, (size_t)Cc * sizeof(float)); /* AUDIT23-17 */'
