//! Text mutations of scene and `.dat` files: numbers swapped for extreme
//! ones, spans deleted, duplicated or spliced in from another file, tokens
//! and identifiers changed, bytes flipped, files cut short.

use rand::Rng;
use rand::rngs::StdRng;

/// Numbers that break things: zeros, signs, the magnitude limit and past
/// it, f64's extremes and its non-finite spellings.
pub const NUMBERS: &[&str] = &[
    "0",
    "-0.0",
    "1",
    "-1",
    "2",
    "0.5",
    "1e-3",
    "1e3",
    "1e6",
    "-1e6",
    "1e12",
    "-1e12",
    "1.0000001e12",
    "1e13",
    "1e-12",
    "1e-300",
    "5e-324",
    "1e300",
    "-1e300",
    "1.7976931348623157e308",
    "NaN",
    "inf",
    "-inf",
    "123456789012345678901234567890",
    "0.0000001",
    "3",
    "8",
    "256",
    "257",
    "100000",
    "-7",
];

/// Text that RON (or the `.dat` reader) treats specially.
const TOKENS: &[&str] = &[
    ",",
    "(",
    ")",
    "[",
    "]",
    "\"",
    "//",
    "/*",
    "\n",
    "\u{feff}",
    "\0",
    "é",
    "r#",
    ":",
    "Some(",
    "None",
    "true",
    "-",
    "e",
    ".",
    "#",
    " ",
    "\t",
    "allow_initial_overlap: true,",
    "name: \"x,y\",",
    "\"a\\\"b\"",
    "()",
    "[]",
];

/// Identifiers swapped for one of their kind.
const IDENTIFIERS: &[&[&str]] = &[
    &["Sphere", "Box", "Capsule"],
    &["Planar", "Spatial"],
    &["Pin", "Ball", "Fixed", "Hinge"],
    &["Spring", "Damper", "SpringDamper"],
    &["Distance", "Angle"],
    &["Rigid", "Linear"],
    &["Angle", "AxisAngle", "Quaternion"],
    &[
        "r#stewart-trinkle",
        "r#moreau-jean",
        "r#anitescu-potra",
        "r#euler-lcp",
    ],
];

/// Byte ranges of the numbers in `text`.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            || (bytes[i] == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        let inside_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && !inside_word {
            let start = i;
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_digit()
                    || matches!(bytes[i], b'.' | b'e' | b'E' | b'-' | b'+'))
            {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// A random position in `bytes` at a character boundary when it is text.
fn position(rng: &mut StdRng, bytes: &[u8]) -> usize {
    let mut at = rng.random_range(0..=bytes.len());
    while at < bytes.len() && (bytes[at] & 0xc0) == 0x80 {
        at += 1;
    }
    at
}

/// Applies 1–4 random mutations to `source`; `other` is another file to
/// splice lines from.
pub fn mutate(rng: &mut StdRng, source: &[u8], other: &[u8]) -> Vec<u8> {
    let mut bytes = source.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        bytes = mutate_once(rng, bytes, other);
    }
    bytes
}

fn mutate_once(rng: &mut StdRng, mut bytes: Vec<u8>, other: &[u8]) -> Vec<u8> {
    let pick = rng.random_range(0..100);
    match pick {
        // Most mutations change a number: the file still parses and runs.
        0..=54 => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let spans = numbers(&text);
            if spans.is_empty() {
                return bytes;
            }
            let (start, end) = spans[rng.random_range(0..spans.len())];
            let value = if rng.random_bool(0.3) {
                // A nearby value: scaled, negated or nudged.
                let x: f64 = text[start..end].parse().unwrap_or(1.0);
                let factor = [10.0, 0.1, -1.0, 1e3, 1e-3, 1.5, 0.0][rng.random_range(0..7)];
                format!("{:?}", x * factor)
            } else {
                NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned()
            };
            let mut out = text[..start].to_owned();
            out.push_str(&value);
            out.push_str(&text[end..]);
            out.into_bytes()
        }
        55..=62 => {
            let start = position(rng, &bytes);
            let end = (start + rng.random_range(1..=24)).min(bytes.len());
            bytes.drain(start..end);
            bytes
        }
        63..=68 => {
            let start = position(rng, &bytes);
            let end = (start + rng.random_range(1..=80)).min(bytes.len());
            let span = bytes[start..end].to_vec();
            let at = position(rng, &bytes);
            bytes.splice(at..at, span);
            bytes
        }
        69..=78 => {
            let token = TOKENS[rng.random_range(0..TOKENS.len())];
            let at = position(rng, &bytes);
            bytes.splice(at..at, token.bytes());
            bytes
        }
        79..=88 => {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let group = IDENTIFIERS[rng.random_range(0..IDENTIFIERS.len())];
            let found: Vec<&str> = group.iter().copied().filter(|w| text.contains(w)).collect();
            if found.is_empty() {
                return bytes;
            }
            let from = found[rng.random_range(0..found.len())];
            let to = group[rng.random_range(0..group.len())];
            let occurrences: Vec<usize> = text.match_indices(from).map(|(i, _)| i).collect();
            let at = occurrences[rng.random_range(0..occurrences.len())];
            let mut out = text[..at].to_owned();
            out.push_str(to);
            out.push_str(&text[at + from.len()..]);
            out.into_bytes()
        }
        89..=93 => {
            let lines: Vec<&[u8]> = other.split(|&b| b == b'\n').collect();
            let line = lines[rng.random_range(0..lines.len())];
            let at = position(rng, &bytes);
            let mut insert = line.to_vec();
            insert.push(b'\n');
            bytes.splice(at..at, insert);
            bytes
        }
        94..=96 => {
            if !bytes.is_empty() {
                let at = rng.random_range(0..bytes.len());
                bytes[at] ^= 1 << rng.random_range(0..8);
            }
            bytes
        }
        _ => {
            let at = position(rng, &bytes);
            bytes.truncate(at);
            bytes
        }
    }
}
