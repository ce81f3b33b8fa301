//! Meetings end to end: a folder of real captions (W3C workshop talks), a malformed file, and
//! recordings moved through `uploaded → transcribing → transcribed → indexed | failed` by an
//! operator's command (a shell script standing in for a speech-to-text build), named by the
//! source and defined in the server's configuration.

mod support;

use std::path::Path;
use std::time::Duration;

use evident_extract::transcript::TranscriptFormat;
use evident_indexers::access::Access;
use evident_indexers::meetings::{Recording, RecordingState, TranscriptionCommand};
use evident_sources::commands::{Commands, TranscriptionSettings, default_env};
use evident_store::indexers::SourceKey;
use evident_store::queue::Clock;
use serde_json::{Value, json};
use support::{Harness, harness, harness_with, locator_json};

/// The "transcriber" that writes a WebVTT naming the input it heard.
const HEARD: &str = "printf 'WEBVTT\\n\\n00:00:00.000 --> 00:00:03.000\\n<v Dana>We keep the retro format; %s was heard.\\n' \"$(basename \"$1\")\" > \"$2\"";

/// The operator's commands of these tests, as `[transcription.commands]` would define them.
fn transcribers() -> Commands {
    let sh = |script: &str| TranscriptionCommand {
        program: "/bin/sh".into(),
        args: vec![
            "-c".into(),
            script.into(),
            "transcriber".into(),
            "{input}".into(),
            "{output}".into(),
        ],
        output_format: TranscriptFormat::Vtt,
        env: default_env(),
    };
    let mut settings = TranscriptionSettings::default();
    settings.commands.insert("heard".into(), sh(HEARD));
    settings.commands.insert(
        "missing-model".into(),
        sh("echo 'model file missing' >&2; exit 2"),
    );
    Commands::new(&settings).expect("valid commands")
}

async fn harness_with_transcribers() -> Harness {
    harness_with(|root| Access::for_tests(root).with_commands(transcribers())).await
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../extract/tests/fixtures/transcripts")
            .join(name),
    )
    .expect("fixture")
}

#[tokio::test]
async fn transcripts_are_searchable_with_time_range_and_speaker_and_bad_files_fail_alone() {
    let h = harness().await;
    let folder = h.dir.path().join("meetings");
    std::fs::create_dir_all(folder.join("2026")).expect("mkdir");
    std::fs::write(folder.join("2026/kd_speech.vtt"), fixture("kd_speech.vtt")).expect("w");
    std::fs::write(folder.join("ac_encoding.vtt"), fixture("ac_encoding.vtt")).expect("w");
    std::fs::write(
        folder.join("broken.vtt"),
        "WEBVTT\n\n00:00:01.000 --> later\nThis timing cannot be read.\n",
    )
    .expect("w");
    std::fs::write(
        folder.join("standup.json"),
        json!({"title": "Daily standup", "segments": [
            {"start": 0.0, "end": 4.5, "speaker": "Ann Lee", "text": "The importer ships on Friday once the schema migration has run on the replica and the dashboards show the new tables filling up without errors for at least an hour."},
            {"start": 4.5, "end": 9.0, "speaker": "Bob", "text": "I will pair with Cy on the backfill tomorrow morning, and we will keep an eye on the lag of the replica so that the export jobs are not starved while it runs."}
        ]})
        .to_string(),
    )
    .expect("w");
    let src = h.register("transcripts", json!({"path": folder})).await;
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["transcripts"], 4, "{r}");
    let d = h.drain().await;
    assert_eq!(d.errors.len(), 1, "{:?}", d.errors);
    let why = d.errors[0].last_error.clone().unwrap_or_default();
    assert!(
        why.contains("broken.vtt") && why.contains("line 3"),
        "{why}"
    );

    // A phrase from Kelly Davis's talk: cited with its time span and speaker.
    let pack = h
        .retrieve(
            "manager of the Mozilla Machine Learning Group",
            &["transcript"],
        )
        .await;
    let top = &pack.items[0];
    assert_eq!(top.source_urn, format!("meeting:{}:2026/kd_speech", src.id));
    let loc = locator_json(&top.locator);
    assert_eq!(loc["meetingId"], "2026/kd_speech");
    assert_eq!(loc["speaker"], "Kelly", "{loc}");
    let (start, end) = (
        loc["startMs"].as_u64().expect("start"),
        loc["endMs"].as_u64().expect("end"),
    );
    assert!(start <= 12_296 && end >= 15_966, "{start}..{end}");

    let pack = h
        .retrieve("pair with Cy on the backfill", &["transcript"])
        .await;
    let loc = locator_json(&pack.items[0].locator);
    assert_eq!(loc["speaker"], "Bob", "{loc}");
    assert_eq!(
        (loc["startMs"].clone(), loc["endMs"].clone()),
        (json!(4500), json!(9000))
    );

    // Unchanged files are not read again; a removed transcript takes its meeting with it.
    let quiet = h.poll(&src.id).await.expect("poll");
    assert_eq!(quiet["transcripts"], 0);
    std::fs::remove_file(folder.join("ac_encoding.vtt")).expect("rm");
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["removed"], 1);
    h.drain().await;
    let urns = h.urns(&format!("meeting:{}:", src.id)).await;
    assert_eq!(
        urns,
        vec![
            format!("meeting:{}:2026/kd_speech", src.id),
            format!("meeting:{}:standup", src.id)
        ]
    );
}

async fn recording(h: &Harness, source: &SourceKey, rel: &str) -> Recording {
    let v = h
        .ctx
        .cursor(source, &format!("recording:{rel}"))
        .await
        .expect("cursor")
        .expect("recorded");
    serde_json::from_value(v).expect("recording")
}

/// Waits for this process's transcriptions to finish (real child processes).
async fn settle(h: &Harness) {
    for _ in 0..500 {
        if h.transcripts.transcribing() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("transcription did not finish");
}

fn script_source(folder: &Path, command: &str, attempts: u32) -> Value {
    json!({
        "path": folder,
        "recordings": {
            "command": command,
            "timeoutSecs": 20,
            "stuckAfterSecs": 60,
            "maxAttempts": attempts,
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recordings_move_through_their_states_and_stuck_ones_recover() {
    let h = harness_with_transcribers().await;
    let folder = h.dir.path().join("recordings");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("retro.m4a"), b"not really audio").expect("w");
    let src = h
        .register("transcripts", script_source(&folder, "heard", 3))
        .await;

    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["recordings"]["transcribing"], 1, "{r}");
    settle(&h).await;
    assert_eq!(
        recording(&h, &src.key(), "retro.m4a").await.state,
        RecordingState::Transcribed
    );
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["recordings"]["indexed"], 1, "{r}");
    assert!(h.drain().await.errors.is_empty());
    let pack = h.retrieve("keep the retro format", &["transcript"]).await;
    let loc = locator_json(&pack.items[0].locator);
    assert_eq!(loc["meetingId"], "retro");
    assert_eq!(loc["speaker"], "Dana");
    let rec = recording(&h, &src.key(), "retro.m4a").await;
    assert!(rec.transcript.is_none(), "the text is not kept once queued");

    // A new recording whose transcription dies with the process: stuck in `transcribing`
    // until `stuckAfterSecs` pass, then started again.
    std::fs::write(folder.join("planning.wav"), b"RIFF....").expect("w");
    let key = "recording:planning.wav";
    let stuck = json!({
        "state": "transcribing", "since": h.clock.now_ms(), "attempts": 1,
        "mtimeMs": mtime_ms(&folder.join("planning.wav")), "len": 8
    });
    h.ctx
        .indexers
        .acquire(&src.key(), &h.ctx.owner, 60_000, h.clock.now_ms())
        .await
        .expect("lease");
    h.ctx
        .set_cursor(&src.key(), key, &stuck)
        .await
        .expect("cursor");
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(
        r["recordings"]["transcribing"], 1,
        "still within the stuck window: {r}"
    );
    assert_eq!(h.transcripts.transcribing(), 0, "nothing runs here");
    h.clock.advance(61_000);
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["recordings"]["transcribing"], 1, "{r}");
    assert_eq!(recording(&h, &src.key(), "planning.wav").await.attempts, 2);
    settle(&h).await;
    h.poll(&src.id).await.expect("poll");
    assert_eq!(
        recording(&h, &src.key(), "planning.wav").await.state,
        RecordingState::Indexed
    );
}

fn mtime_ms(p: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).expect("meta");
    m.mtime() * 1000 + m.mtime_nsec() / 1_000_000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_transcriber_is_retried_then_the_recording_fails_with_its_reason() {
    let h = harness_with_transcribers().await;
    let folder = h.dir.path().join("recordings");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(folder.join("allhands.mp3"), b"ID3").expect("w");
    let src = h
        .register("transcripts", script_source(&folder, "missing-model", 2))
        .await;
    h.poll(&src.id).await.expect("poll");
    settle(&h).await;
    let rec = recording(&h, &src.key(), "allhands.mp3").await;
    assert_eq!(rec.state, RecordingState::Uploaded, "retried");
    assert!(
        rec.error
            .as_deref()
            .unwrap_or("")
            .contains("model file missing")
    );
    h.poll(&src.id).await.expect("poll");
    settle(&h).await;
    let r = h.poll(&src.id).await.expect("poll");
    let rec = recording(&h, &src.key(), "allhands.mp3").await;
    assert_eq!(rec.state, RecordingState::Failed);
    assert_eq!(rec.attempts, 2);
    assert_eq!(r["recordings"]["failed"], 1, "{r}");
    assert!(
        r["failedExamples"][0]
            .as_str()
            .unwrap_or("")
            .contains("model file missing")
    );

    // A new version of the file starts over.
    std::fs::write(folder.join("allhands.mp3"), b"ID3 and more").expect("w");
    let r = h.poll(&src.id).await.expect("poll");
    assert_eq!(r["recordings"]["transcribing"], 1, "{r}");
    settle(&h).await;
}
