//! The corpus and its expectation, as `spatec corpus` writes them into
//! workloads/sensor-batch/testdata/arms.

use std::collections::BTreeMap;

/// The messages of a corpus file: each a big-endian u32 length, then the
/// message as it is on the topic.
pub fn messages(mut b: &[u8]) -> Result<Vec<&[u8]>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let Some((len, rest)) = b.split_first_chunk::<4>() else {
            return Err(format!(
                "message {}: {} bytes left, too few for a length",
                out.len(),
                b.len()
            ));
        };
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(format!(
                "message {}: length {len}, but {} bytes left",
                out.len(),
                rest.len()
            ));
        }
        let (message, rest) = rest.split_at(len);
        out.push(message);
        b = rest;
    }
    Ok(out)
}

/// The figures the rows must meet.
#[derive(Debug)]
pub struct Expected {
    pub messages: u64,
    pub rows: u64,
    /// Each checksum sum by its name; the file writes them as decimal
    /// strings, since they outgrow JSON's numbers.
    pub checksum: BTreeMap<String, i128>,
}

impl Expected {
    pub fn parse(json: &[u8]) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| format!("reading the expectation: {e}"))?;
        let count = |key: &str| {
            v[key]
                .as_u64()
                .ok_or_else(|| format!("the expectation has no count {key:?}"))
        };
        let sums = v["checksum"]
            .as_object()
            .ok_or("the expectation has no \"checksum\" object")?;
        let mut checksum = BTreeMap::new();
        for (name, sum) in sums {
            let sum = sum
                .as_str()
                .and_then(|s| s.parse::<i128>().ok())
                .ok_or_else(|| format!("checksum.{name} is not a decimal string: {sum}"))?;
            checksum.insert(name.clone(), sum);
        }
        Ok(Self {
            messages: count("messages")?,
            rows: count("expected_rows")?,
            checksum,
        })
    }
}
