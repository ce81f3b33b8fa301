//! mbox files split into messages (mboxo, mboxrd, a trusted `Content-Length`).

/// One message of an mbox file: its envelope line (`From sender date`) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MboxEntry {
    pub envelope: String,
    /// Byte offset of the envelope line in the file.
    pub offset: usize,
    pub bytes: Vec<u8>,
}

pub(super) fn lines_with_offsets(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= data.len() {
            return None;
        }
        let end = data[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(data.len(), |i| at + i + 1);
        let line = (at, &data[at..end]);
        at = end;
        Some(line)
    })
}

pub(super) fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Splits an mbox file into messages. A message starts at a line beginning `From `; a
/// `Content-Length` header is trusted when it lands on the next `From ` line (mboxcl2 bodies
/// may contain unescaped `From ` lines) and ignored otherwise (real files carry wrong ones);
/// `>From`-quoted lines (mboxrd, mboxo) lose one `>`.
pub fn split_mbox(data: &[u8]) -> Vec<MboxEntry> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    let starts_message = |at: usize| data[at..].starts_with(b"From ");
    let mut out = Vec::new();
    // Find the first envelope.
    let mut pos = match lines_with_offsets(data).find(|(at, _)| starts_message(*at)) {
        Some((at, _)) => at,
        None => return out,
    };
    while pos < data.len() {
        let env_end = data[pos..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(data.len(), |i| pos + i + 1);
        let envelope = String::from_utf8_lossy(trim_eol(&data[pos..env_end])).to_string();
        let start = env_end;
        // Headers end at the first blank line.
        let mut headers_end = data.len();
        let mut content_length: Option<usize> = None;
        for (at, line) in lines_with_offsets(&data[start..]) {
            let l = trim_eol(line);
            if l.is_empty() {
                headers_end = start + at + line.len();
                break;
            }
            if l.len() > 15 && l[..15].eq_ignore_ascii_case(b"content-length:") {
                content_length = String::from_utf8_lossy(&l[15..]).trim().parse().ok();
            }
        }
        // Where the next message begins.
        let by_length = content_length.and_then(|n| {
            let end = headers_end.checked_add(n)?;
            if end > data.len() {
                return None;
            }
            let mut next = end;
            while next < data.len() && (data[next] == b'\n' || data[next] == b'\r') {
                next += 1;
            }
            (next == data.len() || starts_message(next)).then_some((end, next))
        });
        let (end, next) = by_length.unwrap_or_else(|| {
            // Without a trustworthy length, every line starting `From ` begins a message (the
            // mbox rule; writers escape such lines in bodies as `>From `).
            let next = lines_with_offsets(&data[headers_end..])
                .map(|(at, _)| headers_end + at)
                .find(|abs| starts_message(*abs))
                .unwrap_or(data.len());
            (next, next)
        });
        let mut bytes = Vec::with_capacity(end.saturating_sub(start));
        let body_from = headers_end.min(end);
        bytes.extend_from_slice(&data[start..body_from]);
        for (_, line) in lines_with_offsets(&data[body_from..end]) {
            let quoted = line.iter().take_while(|b| **b == b'>').count();
            if quoted > 0 && line[quoted..].starts_with(b"From ") && content_length.is_none() {
                bytes.extend_from_slice(&line[1..]);
            } else {
                bytes.extend_from_slice(line);
            }
        }
        out.push(MboxEntry {
            envelope,
            offset: pos,
            bytes,
        });
        pos = next.max(env_end);
    }
    out
}
