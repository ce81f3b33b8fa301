//! The text index and the row map saved beside the SQLite file (`text.index`), so a restart
//! loads them instead of reading and tokenising every chunk row.
//!
//! Format (little-endian; varints are LEB128):
//!
//! ```text
//! magic "EVTXTIX\0" · u32 format · u32 header length · header (JSON, `Header`)
//! rows:  per row   varint(rid − previous rid) · varint(terms) · varint(partition)
//!                  · u64 title hash · varint(id length) · id · varint(scope) · varint(kind)
//!                  · varint(typed labels)
//! terms: per term  varint(text length) · text · varint(postings) · per posting
//!                  varint(rid − previous rid) · varint(tf); a zero text length ends the list
//! u32 CRC-32 of everything before it
//! ```
//!
//! Only live rows are written (no stale postings), so a loaded index equals one rebuilt from
//! SQLite; document frequencies and partition statistics are recomputed while loading.
//! A file is used only when its checksum, format, analysis fingerprint (see
//! [`super::analysis_fingerprint`]) and store id match and its marks are not ahead of the
//! database; anything else is rebuilt from SQLite.

use std::io::{BufWriter, Write};
use std::path::Path;

use evident_core::{Scope, Typed};
use serde::{Deserialize, Serialize};

use super::TextIndex;
use super::postings::{Inner, Postings};
use crate::vectors::RowsExport;

const MAGIC: &[u8; 8] = b"EVTXTIX\0";
const FORMAT: u32 = 1;
/// Terms written per hold of the index's read lock (writers publish in between).
const TERMS_PER_LOCK: usize = 4096;

#[derive(Serialize, Deserialize)]
struct Header {
    store_id: String,
    analysis: u32,
    high_water: u64,
    changes_seq: u64,
    rows: u64,
    parts: Vec<String>,
    scopes: Vec<Scope>,
    kinds: Vec<String>,
    typed: Vec<Typed>,
}

/// Where a saved file stands against the database: every row id ≤ `high_water` is in it as of
/// change-log sequence `changes_seq` (later changes are replayed from the log at load).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marks {
    pub store_id: String,
    pub high_water: u64,
    pub changes_seq: u64,
}

/// What a save wrote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Saved {
    pub rows: usize,
    pub postings: usize,
    pub bytes: u64,
}

/// Why a file was not used (it is then rebuilt from SQLite).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    #[error("no saved text index")]
    Missing,
    #[error("saved text index unreadable: {0}")]
    Unreadable(String),
    #[error("saved text index belongs to another data directory")]
    Foreign,
    #[error("saved text index is of another format or tokeniser")]
    Outdated,
    #[error("saved text index is ahead of the database (restored from a backup?)")]
    AheadOfDatabase,
}

fn bad(what: &str) -> LoadError {
    LoadError::Unreadable(what.to_string())
}

/// A writer that keeps the CRC-32 of what went through it.
struct Checksummed<W: Write> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Checksummed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Writes `text` and the exported row map (rows ≤ `marks.high_water`) to `path` atomically
/// (temporary file, fsync, rename). Holds the index's read lock only in short stretches.
/// `durable` runs before the rename: everything the file holds was published, so committed,
/// before it; it makes those commits durable (ADR 0009: published is not yet durable).
pub(crate) fn save(
    path: &Path,
    text: &TextIndex,
    rows: RowsExport,
    marks: &Marks,
    durable: &dyn Fn() -> std::io::Result<()>,
) -> std::io::Result<Saved> {
    // Per row: (terms, partition, title hash); rows the text index no longer holds (removed
    // after the export: a later change, replayed at load) are left out.
    let (text_rows, parts) = {
        let inner = text.inner.read();
        let found: Vec<Option<(u32, u32, u64)>> = rows
            .rows
            .iter()
            .map(|(rid, ..)| {
                let len = *inner.doc_len.get(*rid)?;
                Some((
                    len,
                    *inner.row_part.get(*rid)?,
                    *inner.title_hash.get(*rid)?,
                ))
            })
            .collect();
        let parts: Vec<String> = inner.part_names.iter().map(|p| p.to_string()).collect();
        (found, parts)
    };
    let (body, included, written) = encode_rows(&rows, &text_rows);
    let header = Header {
        store_id: marks.store_id.clone(),
        analysis: super::analysis_fingerprint(),
        high_water: marks.high_water,
        changes_seq: marks.changes_seq,
        rows: written as u64,
        parts,
        scopes: rows.scopes,
        kinds: rows.kinds,
        typed: rows.typed,
    };
    let header = serde_json::to_vec(&header).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("index.tmp");
    let file = crate::private::create_file(&tmp)?;
    let mut out = Checksummed {
        inner: BufWriter::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
    };
    out.write_all(MAGIC)?;
    out.write_all(&FORMAT.to_le_bytes())?;
    out.write_all(&(header.len() as u32).to_le_bytes())?;
    out.write_all(&header)?;
    out.write_all(&body)?;
    drop(body);
    let postings = write_terms(&mut out, text, &included)?;
    let crc = out.crc.clone().finalize();
    let mut file = out.inner.into_inner().map_err(|e| e.into_error())?;
    file.write_all(&crc.to_le_bytes())?;
    file.sync_all()?;
    let bytes = file.metadata()?.len();
    drop(file);
    durable()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        // The rename is durable only once the directory is.
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(Saved {
        rows: written,
        postings,
        bytes,
    })
}

/// The row section, the set of rows written (a bitset by row id) and how many.
fn encode_rows(
    rows: &RowsExport,
    text_rows: &[Option<(u32, u32, u64)>],
) -> (Vec<u8>, Vec<u64>, usize) {
    let high_water = rows.rows.last().map_or(0, |r| r.0);
    let mut included = vec![0u64; (high_water as usize >> 6) + 1];
    let mut body = Vec::with_capacity(rows.rows.len() * 64);
    let (mut previous, mut written) = (0u64, 0usize);
    for ((rid, id, scope, kind, typed), found) in rows.rows.iter().zip(text_rows) {
        let Some((len, part, title_hash)) = found else {
            continue;
        };
        included[*rid as usize >> 6] |= 1 << (rid & 63);
        put_varint(&mut body, rid - previous);
        previous = *rid;
        put_varint(&mut body, *len as u64);
        put_varint(&mut body, *part as u64);
        body.extend_from_slice(&title_hash.to_le_bytes());
        put_str(&mut body, id);
        for v in [*scope, *kind, *typed] {
            put_varint(&mut body, v as u64);
        }
        written += 1;
    }
    (body, included, written)
}

/// The term section: each term's postings of included rows, by row id. Returns the postings
/// written.
fn write_terms<W: Write>(
    out: &mut W,
    text: &TextIndex,
    included: &[u64],
) -> std::io::Result<usize> {
    let is_in = |rid: u32| {
        included
            .get(rid as usize >> 6)
            .is_some_and(|w| w & (1 << (rid & 63)) != 0)
    };
    let terms = text.inner.read().postings.len();
    let (mut buf, mut total) = (Vec::new(), 0);
    let mut pairs: Vec<(u32, u16)> = Vec::new();
    for start in (0..terms).step_by(TERMS_PER_LOCK) {
        {
            let inner = text.inner.read();
            let end = (start + TERMS_PER_LOCK).min(terms);
            for (p, term) in inner.postings[start..end]
                .iter()
                .zip(&inner.term_text[start..end])
            {
                pairs.clear();
                pairs.extend(
                    p.rids
                        .iter()
                        .zip(&p.tfs)
                        .filter(|(r, _)| is_in(**r))
                        .map(|(r, t)| (*r, *t)),
                );
                if pairs.is_empty() {
                    continue;
                }
                // Lists are in insertion order, which re-indexed rows break: sort.
                pairs.sort_unstable_by_key(|(r, _)| *r);
                put_str(&mut buf, term);
                put_varint(&mut buf, pairs.len() as u64);
                let mut previous = 0u32;
                for &(rid, tf) in &pairs {
                    put_varint(&mut buf, (rid - previous) as u64);
                    put_varint(&mut buf, tf as u64);
                    previous = rid;
                }
                total += pairs.len();
            }
        }
        out.write_all(&buf)?;
        buf.clear();
    }
    put_varint(&mut buf, 0);
    out.write_all(&buf)?;
    Ok(total)
}

/// Reads the bytes of a saved file.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, LoadError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or_else(|| bad("truncated"))?;
            self.pos += 1;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("varint too long"))
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        let end = self.pos.checked_add(n).ok_or_else(|| bad("length"))?;
        let out = self
            .buf
            .get(self.pos..end)
            .ok_or_else(|| bad("truncated"))?;
        self.pos = end;
        Ok(out)
    }

    fn str(&mut self) -> Result<&'a str, LoadError> {
        let n = self.varint()? as usize;
        std::str::from_utf8(self.bytes(n)?).map_err(|_| bad("text is not UTF-8"))
    }

    fn small(&mut self, below: usize) -> Result<u32, LoadError> {
        let v = self.varint()?;
        if v as usize >= below {
            return Err(bad("index out of range"));
        }
        Ok(v as u32)
    }
}

/// Loads a saved file: the text index's structures and the row map, if the file is sound and
/// matches `expect` (store id) and the database's current marks (`rid_seq`: the newest row id
/// ever given; `changes_seq`: the change log's newest sequence number).
pub(crate) fn load(
    path: &Path,
    store_id: &str,
    rid_seq: u64,
    changes_seq: u64,
) -> Result<(Inner, RowsExport, Marks), LoadError> {
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
        Err(e) => return Err(LoadError::Unreadable(e.to_string())),
    };
    if file.len() < 20 || &file[..8] != MAGIC {
        return Err(bad("not a text index file"));
    }
    let (body, crc) = file.split_at(file.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader { buf: body, pos: 8 };
    let format = u32::from_le_bytes(r.bytes(4)?.try_into().map_err(|_| bad("format"))?);
    let header_len = u32::from_le_bytes(r.bytes(4)?.try_into().map_err(|_| bad("header"))?);
    let header: Header = serde_json::from_slice(r.bytes(header_len as usize)?)
        .map_err(|e| LoadError::Unreadable(format!("header: {e}")))?;
    if format != FORMAT || header.analysis != super::analysis_fingerprint() {
        return Err(LoadError::Outdated);
    }
    if header.store_id != store_id {
        return Err(LoadError::Foreign);
    }
    if header.high_water > rid_seq || header.changes_seq > changes_seq {
        return Err(LoadError::AheadOfDatabase);
    }
    let marks = Marks {
        store_id: header.store_id.clone(),
        high_water: header.high_water,
        changes_seq: header.changes_seq,
    };
    let (mut inner, mut export) = read_rows(&mut r, &header)?;
    read_terms(&mut r, &mut inner)?;
    if r.pos != body.len() {
        return Err(bad("trailing bytes"));
    }
    export.scopes = header.scopes;
    export.kinds = header.kinds;
    export.typed = header.typed;
    Ok((inner, export, marks))
}

fn read_rows(r: &mut Reader<'_>, header: &Header) -> Result<(Inner, RowsExport), LoadError> {
    let mut inner = Inner::default();
    for p in &header.parts {
        inner.part_id(p);
    }
    let mut rows = Vec::with_capacity(header.rows as usize);
    let mut rid = 0u64;
    for _ in 0..header.rows {
        rid = rid
            .checked_add(r.varint()?)
            .filter(|next| *next <= header.high_water && *next <= u32::MAX as u64)
            .ok_or_else(|| bad("row id out of range"))?;
        let len = u32::try_from(r.varint()?).map_err(|_| bad("row length"))?;
        let part = r.small(header.parts.len())?;
        let title_hash = u64::from_le_bytes(r.bytes(8)?.try_into().map_err(|_| bad("hash"))?);
        let id: std::sync::Arc<str> = r.str()?.into();
        let scope = r.small(header.scopes.len())?;
        let kind = r.small(header.kinds.len())?;
        let typed = r.small(header.typed.len())?;
        if inner.doc_len.insert(rid, len).is_some() {
            return Err(bad("row written twice"));
        }
        inner.row_part.insert(rid, part);
        inner.title_hash.insert(rid, title_hash);
        let stats = &mut inner.parts[part as usize];
        stats.docs += 1;
        stats.total_len += len as u64;
        rows.push((rid, id, scope, kind, typed));
    }
    let export = RowsExport {
        rows,
        ..Default::default()
    };
    Ok((inner, export))
}

fn read_terms(r: &mut Reader<'_>, inner: &mut Inner) -> Result<(), LoadError> {
    loop {
        let term = r.str()?;
        if term.is_empty() {
            return Ok(());
        }
        let id = inner.term_id(term.into());
        let n = r.varint()? as usize;
        if n > inner.doc_len.len() {
            return Err(bad("posting count"));
        }
        let mut p = Postings {
            rids: Vec::with_capacity(n),
            tfs: Vec::with_capacity(n),
            df: Vec::new(),
            unsorted: false,
        };
        let mut rid = 0u64;
        for _ in 0..n {
            match r.varint()? {
                0 if !p.rids.is_empty() => return Err(bad("posting written twice")),
                delta => rid += delta,
            }
            let tf = u16::try_from(r.varint()?).map_err(|_| bad("term frequency"))?;
            let part = *inner
                .row_part
                .get(rid)
                .ok_or_else(|| bad("posting of an unknown row"))?;
            p.rids.push(rid as u32);
            p.tfs.push(tf);
            match p.df.iter_mut().find(|(q, _)| *q == part) {
                Some((_, c)) => *c += 1,
                None => p.df.push((part, 1)),
            }
        }
        p.df.sort_unstable();
        inner.live_postings += n;
        if !inner.postings[id as usize].rids.is_empty() {
            return Err(bad("term written twice"));
        }
        inner.postings[id as usize] = p;
    }
}
