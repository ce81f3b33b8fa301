#!/usr/bin/env python3
"""Derive the character-class tables used by shared/ai/src/wordpiece/tables.rs by probing
the real HuggingFace `tokenizers` BertNormalizer / BertPreTokenizer on every code
point, and print them as Rust `const` arrays of inclusive (lo, hi) ranges.

The classes are exactly what tokenizers' Rust code computes with its (older)
`unicode_categories` tables, which differ from current Unicode data in places:
  REMOVED_CHARS      -- dropped by clean_text (NUL, U+FFFD, Cc/Cf/Co except \\t \\n \\r)
  NONSPACING_MARKS   -- NFD-stable chars dropped by strip_accents (category Mn)
  PUNCTUATION        -- isolated by BertPreTokenizer (ASCII punctuation or category P*)
Whitespace is std's char::is_whitespace (after REMOVED_CHARS), CJK is a fixed range list.
"""
from tokenizers import normalizers, pre_tokenizers

clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
nfd = normalizers.NFD()
pre = pre_tokenizers.BertPreTokenizer()


def ranges(xs):
    out = []
    for x in xs:
        if out and out[-1][1] + 1 == x:
            out[-1][1] = x
        else:
            out.append([x, x])
    return out


def main():
    removed, mn, punct = [], [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        r = clean.normalize_str(c)
        if r == "":
            removed.append(cp)
        if nfd.normalize_str(c) == c and strip.normalize_str(c) == "":
            mn.append(cp)
        if r == c and len(pre.pre_tokenize_str("a" + c + "a")) == 3:
            punct.append(cp)
    for name, xs in (("REMOVED_CHARS", removed), ("NONSPACING_MARKS", mn), ("PUNCTUATION", punct)):
        rs = ranges(xs)
        print(f"// {len(rs)} ranges, {len(xs)} code points")
        print(f"const {name}: &[(u32, u32)] = &[")
        line = "   "
        for a, b in rs:
            item = f" (0x{a:X}, 0x{b:X}),"
            if len(line) + len(item) > 96:
                print(line)
                line = "   "
            line += item
        if line.strip():
            print(line)
        print("];")


if __name__ == "__main__":
    main()
