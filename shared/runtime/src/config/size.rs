//! Byte sizes in the configuration: an integer (bytes) or a string with a unit, `"4GiB"`,
//! `"512 MiB"`, `"2G"` (binary multiples: configuration sizes are memory sizes).

use serde::{Deserialize, Deserializer};

/// Parses `"512MiB"`, `"4 GiB"`, `"2G"`, `"1048576"`; units K/M/G/T with optional `iB`/`B`,
/// any case, all powers of 1024.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (t[..split].trim(), t[split..].trim().to_ascii_lowercase());
    let shift = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("`{text}`: unknown unit (use KiB, MiB, GiB or TiB)")),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}`: expected a size such as \"4GiB\""))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(format!("`{text}`: out of range"));
    }
    Ok(bytes as u64)
}

/// Serde: a size given as bytes or as a string with a unit.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(u64),
        Text(String),
    }
    match Raw::deserialize(d)? {
        Raw::Bytes(b) => Ok(b),
        Raw::Text(t) => parse_size(&t).map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_binary_units() {
        let cases: [(&str, Result<u64, ()>); 10] = [
            ("0", Ok(0)),
            ("1048576", Ok(1 << 20)),
            ("512MiB", Ok(512 << 20)),
            ("4 GiB", Ok(4 << 30)),
            ("2G", Ok(2 << 30)),
            ("1.5gb", Ok(3 << 29)),
            ("64k", Ok(64 << 10)),
            ("4 parsecs", Err(())),
            ("GiB", Err(())),
            ("-1G", Err(())),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text).map_err(drop), want, "{text}");
        }
    }

    #[test]
    fn the_memory_budget_defaults_to_none_and_takes_a_size_from_the_environment() {
        use crate::config::Config;
        let env = |v: &str| vec![("EVIDENT__STORE__MEMORY_BUDGET".to_string(), v.to_string())];
        assert_eq!(
            Config::load(None, vec![])
                .expect("defaults")
                .store
                .memory_budget,
            0
        );
        let cfg = Config::load(None, env("3GiB")).expect("string");
        assert_eq!(cfg.store.memory_budget, 3 << 30);
        let cfg = Config::load(None, env("1048576")).expect("integer");
        assert_eq!(cfg.store.memory_budget, 1 << 20);
        let err = Config::load(None, env("lots")).expect_err("refused");
        assert!(
            err.to_string().contains("memory_budget") || err.to_string().contains("lots"),
            "{err}"
        );
    }
}
