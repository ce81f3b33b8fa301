//! JSON: segments with text, times and speakers.

use super::*;

pub(super) type JsonObject = serde_json::Map<String, Value>;

/// Parses the JSON form.
///
/// `{"title"?: string, "date"?: string, "segments": [{"start": seconds, "end": seconds,
/// "speaker"?: string, "text": string, "id"?: string | number}]}`; `"cues"` may stand for
/// `"segments"`, and `startMs` / `endMs` (milliseconds) for `start` / `end` (seconds, fractions
/// allowed). The text is taken as plain text — JSON is data, not markup, so `<` and `&` in it are
/// kept — with its lines trimmed; the speaker comes only from `speaker`.
pub fn parse_json(text: &str) -> Result<Transcript, TranscriptError> {
    let text = strip_bom(text);
    if is_blank(text) {
        return Err(TranscriptError::Empty);
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| TranscriptError::Malformed(format!("invalid JSON transcript: {e}")))?;
    let Value::Object(root) = value else {
        return Err(TranscriptError::Malformed(
            "a JSON transcript must be an object with a \"segments\" (or \"cues\") array".into(),
        ));
    };
    let title =
        json_string(&root, "title", "the transcript")?.and_then(|title| non_empty(title.trim()));
    // The date is kept as written: its format is the producer's, and parsing it is not ours.
    let date = json_string(&root, "date", "the transcript")?.filter(|date| !is_blank(date));

    let (key, list) = match (root.get("segments"), root.get("cues")) {
        (Some(list), _) if !list.is_null() => ("segments", list),
        (_, Some(list)) if !list.is_null() => ("cues", list),
        _ => {
            return Err(TranscriptError::Malformed(
                "the JSON transcript has no \"segments\" (or \"cues\") array".into(),
            ));
        }
    };
    let Value::Array(items) = list else {
        return Err(TranscriptError::Malformed(format!(
            "\"{key}\" must be an array of segments"
        )));
    };

    let mut cues = Vec::new();
    for (index, item) in items.iter().enumerate() {
        cues.extend(json_cue(item, &format!("{key}[{index}]"))?);
    }
    finish(TranscriptFormat::Json, title, date, cues)
}

/// One segment as a cue; `None` for a segment without text.
fn json_cue(item: &Value, owner: &str) -> Result<Option<Cue>, TranscriptError> {
    let Value::Object(segment) = item else {
        return Err(TranscriptError::Malformed(format!(
            "{owner} must be an object with \"start\", \"end\" and \"text\""
        )));
    };
    let start_ms = json_time(segment, "start", "startMs", owner)?;
    let end_ms = json_time(segment, "end", "endMs", owner)?;
    if end_ms < start_ms {
        return Err(TranscriptError::Malformed(format!(
            "{owner} ends ({}) before it starts ({})",
            format_ms(end_ms),
            format_ms(start_ms)
        )));
    }
    let raw_text = match segment.get("text") {
        Some(Value::String(text)) => text,
        Some(_) => {
            return Err(TranscriptError::Malformed(format!(
                "{owner}: \"text\" must be a string"
            )));
        }
        None => {
            return Err(TranscriptError::Malformed(format!(
                "{owner}: missing \"text\""
            )));
        }
    };
    let text = normalise_lines(raw_text);
    if text.is_empty() {
        return Ok(None);
    }
    let speaker = json_string(segment, "speaker", owner)?
        .and_then(|speaker| non_empty(&collapse_whitespace(&speaker)));
    let id = match segment.get("id") {
        Some(Value::String(id)) => non_empty(id.trim()),
        Some(Value::Number(id)) => Some(id.to_string()),
        _ => None,
    };
    Ok(Some(Cue {
        id,
        start_ms,
        end_ms,
        speaker,
        text,
    }))
}

/// An optional string member: absent or `null` is `None`, anything but a string is an error.
pub(super) fn json_string(
    object: &JsonObject,
    key: &str,
    owner: &str,
) -> Result<Option<String>, TranscriptError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(TranscriptError::Malformed(format!(
            "{owner}: \"{key}\" must be a string"
        ))),
    }
}

/// A time in milliseconds from `ms_key` (preferred: it is exact) or `seconds_key`.
pub(super) fn json_time(
    segment: &JsonObject,
    seconds_key: &str,
    ms_key: &str,
    owner: &str,
) -> Result<u64, TranscriptError> {
    if let Some(value) = segment.get(ms_key).filter(|v| !v.is_null()) {
        // Integers are what the form asks for; whole-valued floats (`1500.0`) from loosely typed
        // producers mean the same thing.
        return value
            .as_u64()
            .or_else(|| value.as_f64().and_then(float_to_ms))
            .ok_or_else(|| {
                TranscriptError::Malformed(format!(
                    "{owner}: \"{ms_key}\" must be a non-negative number of milliseconds"
                ))
            });
    }
    if let Some(value) = segment.get(seconds_key).filter(|v| !v.is_null()) {
        return value
            .as_f64()
            .and_then(|seconds| float_to_ms(seconds * 1000.0))
            .ok_or_else(|| {
                TranscriptError::Malformed(format!(
                    "{owner}: \"{seconds_key}\" must be a non-negative number of seconds"
                ))
            });
    }
    Err(TranscriptError::Malformed(format!(
        "{owner}: missing \"{seconds_key}\" (seconds) or \"{ms_key}\" (milliseconds)"
    )))
}

/// Rounds a millisecond count to an integer, refusing negatives, NaN and values beyond `u64`.
pub(super) fn float_to_ms(ms: f64) -> Option<u64> {
    // Rounding absorbs binary fractions: 0.1 s * 1000 is 100.00000000000001 ms.
    // NaN and infinities are outside the range too.
    (0.0..=u64::MAX as f64)
        .contains(&ms)
        .then(|| ms.round() as u64)
}
