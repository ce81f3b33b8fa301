//! Segments, tiny-segment merging, packing, and the chunks they become.

use super::TextChunk;
use super::tokens::TokenCount;
use super::units::Unit;

/// A run of units `[start, end)` packed independently of its neighbours.
#[derive(Debug, Clone, Copy)]
pub(super) struct Group {
    start: usize,
    end: usize,
    tc: TokenCount,
    /// Starts with a heading (otherwise it follows an anchor or is the document start).
    heading: bool,
}

/// Splits the unit list at hard boundaries: before headings and after anchors.
pub(super) fn segments(units: &[Unit]) -> Vec<Group> {
    let mut segs = Vec::new();
    let mut start = 0;
    let mut tc = TokenCount::default();
    for (i, u) in units.iter().enumerate() {
        if u.heading && i > start {
            segs.push(Group {
                start,
                end: i,
                tc,
                heading: units[start].heading,
            });
            start = i;
            tc = TokenCount::default();
        }
        tc = tc.plus(u.tc);
        if u.cut_after {
            segs.push(Group {
                start,
                end: i + 1,
                tc,
                heading: units[start].heading,
            });
            start = i + 1;
            tc = TokenCount::default();
        }
    }
    if start < units.len() {
        segs.push(Group {
            start,
            end: units.len(),
            tc,
            heading: units[start].heading,
        });
    }
    segs
}

/// A tiny segment is joined to the next one when it starts with a heading (tiny sections pack
/// with what follows) or when the next one does not (same section continues).
pub(super) fn merge_tiny_segments(segs: Vec<Group>, min: usize) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::with_capacity(segs.len());
    let mut cur: Option<Group> = None;
    for s in segs {
        cur = Some(match cur {
            Some(c) if c.tc.estimate() < min && (c.heading || !s.heading) => Group {
                start: c.start,
                end: s.end,
                tc: c.tc.plus(s.tc),
                heading: c.heading,
            },
            Some(c) => {
                out.push(c);
                s
            }
            None => s,
        });
    }
    if let Some(c) = cur {
        out.push(c);
    }
    out
}

/// A chunk under construction: units `[start, end)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Piece {
    start: usize,
    end: usize,
    tc: TokenCount,
}

pub(super) fn pack(units: &[Unit], groups: &[Group], max: usize, min: usize) -> Vec<Piece> {
    let mut pieces: Vec<Piece> = Vec::new();
    for g in groups {
        // A tiny tail of a section (it follows an anchor, and a heading follows it): append it
        // to the previous chunk, which is in the same section, when that still fits.
        if !g.heading
            && g.tc.estimate() < min
            && let Some(last) = pieces.last_mut()
        {
            let merged = last.tc.plus(g.tc);
            if last.end == g.start && merged.estimate() <= max {
                last.end = g.end;
                last.tc = merged;
                continue;
            }
        }
        let first = pieces.len();
        let mut start = g.start;
        let mut acc = TokenCount::default();
        for (k, u) in units[g.start..g.end].iter().enumerate() {
            let i = g.start + k;
            let next = acc.plus(u.tc);
            if i > start && next.estimate() > max {
                pieces.push(Piece {
                    start,
                    end: i,
                    tc: acc,
                });
                start = i;
                acc = u.tc;
            } else {
                acc = next;
            }
        }
        pieces.push(Piece {
            start,
            end: g.end,
            tc: acc,
        });
        if pieces.len() - first >= 2 {
            rebalance_tail(units, &mut pieces, max, min);
        }
    }
    pieces
}

/// Moves units from the end of the second-to-last piece into a tiny last piece.
fn rebalance_tail(units: &[Unit], pieces: &mut [Piece], max: usize, min: usize) {
    let n = pieces.len();
    let (prev, last) = (pieces[n - 2], pieces[n - 1]);
    if last.tc.estimate() >= min {
        return;
    }
    let (mut p, mut l, mut m) = (prev.tc, last.tc, last.start);
    while m > prev.start + 1 && l.estimate() < min {
        let u = units[m - 1].tc;
        let nl = l.plus(u);
        let np = p.minus(u);
        if nl.estimate() > max || np.estimate() < nl.estimate() {
            break;
        }
        l = nl;
        p = np;
        m -= 1;
    }
    pieces[n - 2] = Piece {
        start: prev.start,
        end: m,
        tc: p,
    };
    pieces[n - 1] = Piece {
        start: m,
        end: last.end,
        tc: l,
    };
}

pub(super) fn materialise(
    text: &str,
    units: &[Unit],
    pieces: &[Piece],
    paths: &[Vec<String>],
) -> Vec<TextChunk> {
    let mut out = Vec::with_capacity(pieces.len());
    let (mut cursor_byte, mut cursor_char) = (0, 0);
    for (ordinal, p) in pieces.iter().enumerate() {
        let byte_start = units[p.start].start;
        let byte_end = units[p.end - 1].end;
        cursor_char += text[cursor_byte..byte_start].chars().count();
        let char_start = cursor_char;
        cursor_char += text[byte_start..byte_end].chars().count();
        cursor_byte = byte_end;
        out.push(TextChunk {
            text: text[byte_start..byte_end].to_string(),
            byte_start,
            byte_end,
            char_start,
            char_end: cursor_char,
            heading_path: paths[units[p.start].section].clone(),
            ordinal,
        });
    }
    out
}
