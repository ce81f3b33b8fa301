//! Real PDFs (pdfplumber's test documents; US federal works): text per page, checked against
//! pdfplumber's own expected text; an encrypted PDF is reported as encrypted.

use evident_extract::document::{ExtractError, Format, extract};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/pdf/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| c.is_whitespace() || c == ':' || c == '-')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_transcript_page_has_the_words_pdfplumber_finds() {
    let doc = extract(Format::Pdf, &fixture("scotus-transcript-p1.pdf")).expect("pdf");
    assert_eq!(doc.pages.len(), 1);
    assert_eq!(doc.pages[0].number, Some(1));
    let ours = words(&doc.pages[0].text);
    let expected = String::from_utf8(fixture(
        "scotus-transcript-p1.pdfplumber-expected-layout.txt",
    ))
    .expect("utf-8");
    let theirs = words(&expected);
    let missing: Vec<&String> = theirs.iter().filter(|w| !ours.contains(w)).collect();
    // Layout differs (pdfplumber reproduces columns); the words must be the same.
    assert!(
        missing.len() * 100 <= theirs.len(),
        "{} of {} words missing: {missing:?}",
        missing.len(),
        theirs.len()
    );
    assert!(
        doc.pages[0]
            .text
            .contains("IN THE SUPREME COURT OF THE UNITED STATES")
    );
}

#[test]
fn a_table_pdf_keeps_its_cells() {
    let doc = extract(Format::Pdf, &fixture("senate-expenditures.pdf")).expect("pdf");
    let text = &doc.pages[0].text;
    for cell in ["LEGISLATIVE CORRESPONDENT", "37,499.96", "STAFF ASSISTANT"] {
        assert!(text.contains(cell), "{cell} in {text}");
    }
}

#[test]
fn encrypted_and_corrupt_pdfs_are_errors() {
    assert_eq!(
        extract(Format::Pdf, &fixture("encrypted-user-password.pdf")),
        Err(ExtractError::Encrypted)
    );
    let mut cut = fixture("senate-expenditures.pdf");
    cut.truncate(cut.len() / 3);
    assert!(extract(Format::Pdf, &cut).is_err());
}
