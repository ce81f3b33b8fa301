//! Timings: cue timing lines and timestamps parsed, milliseconds formatted.

use super::*;

/// Reads a timing line `START --> END [settings]`, reporting `line_no` when it cannot.
pub(super) fn parse_cue_timing(
    line: &str,
    line_no: usize,
    srt: bool,
) -> Result<(u64, u64), TranscriptError> {
    let (start_ms, end_ms) = parse_timing(line, srt).ok_or_else(|| {
        let example = if srt {
            "00:01:02,345 --> 00:01:04,000"
        } else {
            "00:01:02.345 --> 00:01:04.000"
        };
        malformed(
            line_no,
            format!(
                "malformed cue timing \"{}\"; expected \"START --> END\" like \"{example}\"",
                excerpt(line)
            ),
        )
    })?;
    if end_ms < start_ms {
        return Err(malformed(
            line_no,
            format!(
                "the cue ends ({}) before it starts ({})",
                format_ms(end_ms),
                format_ms(start_ms)
            ),
        ));
    }
    Ok((start_ms, end_ms))
}

pub(super) fn parse_timing(line: &str, srt: bool) -> Option<(u64, u64)> {
    let (left, right) = line.split_once("-->")?;
    let start = parse_timestamp(left.trim(), srt)?;
    // WebVTT cue settings (`line:15%`) and SRT coordinates (`X1:…`) follow the end time.
    let end = parse_timestamp(right.split_whitespace().next()?, srt)?;
    Some((start, end))
}

/// `[h…:]mm:ss.ttt` in milliseconds; SRT also allows `,` before the fraction.
///
/// Hours may have any number of digits, including one (`0:00:08.160` is how many human-edited
/// WebVTT files are written, though the spec asks for two). Minutes and seconds have one or two
/// digits below 60, the fraction one to three digits (`.5` is half a second). Arithmetic is
/// checked, so absurd hour counts are malformed rather than an overflow.
pub(super) fn parse_timestamp(s: &str, srt: bool) -> Option<u64> {
    let separator = s.rfind(['.', ','])?;
    let (clock, fraction) = (&s[..separator], &s[separator + 1..]);
    if !srt && s[separator..].starts_with(',') {
        return None;
    }
    if fraction.len() > 3 || !is_digits(fraction) {
        return None;
    }
    // Scale "5" to 500 and "25" to 250.
    let mut millis: u64 = fraction.parse().ok()?;
    for _ in fraction.len()..3 {
        millis *= 10;
    }

    let mut parts = clock.split(':');
    let (hours, minutes, seconds) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(sec), None, None) => ("0", m, sec),
        (Some(h), Some(m), Some(sec), None) => (h, m, sec),
        _ => return None,
    };
    if !is_digits(hours) || !is_clock_field(minutes) || !is_clock_field(seconds) {
        return None;
    }
    let hours: u64 = hours.parse().ok()?;
    let minutes: u64 = minutes.parse().ok()?;
    let seconds: u64 = seconds.parse().ok()?;
    if minutes >= 60 || seconds >= 60 {
        return None;
    }
    hours
        .checked_mul(3_600_000)?
        .checked_add(minutes * 60_000 + seconds * 1000 + millis)
}

pub(super) fn is_clock_field(s: &str) -> bool {
    (1..=2).contains(&s.len()) && is_digits(s)
}

/// Non-empty and ASCII digits only (`str::parse` would also take a leading `+`).
pub(super) fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `hh:mm:ss.mmm`, for error messages.
pub(super) fn format_ms(ms: u64) -> String {
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}
