//! Where a scene file breaks the magnitude rule ([`crate::magnitude`]): the
//! first number that is not finite or above [`MAX_MAGNITUDE`], located in the
//! text.
//!
//! The rule is checked once, generically, on the scene text read as a RON
//! value tree, so that a field added later is covered without a new check.

use super::locate::locate;

pub use crate::magnitude::{MAX_MAGNITUDE, MIN_INERTIA, MIN_MASS_OR_SIZE, allowed};

/// The first number in `source` that breaks the rule, as (anchors to locate
/// it, the field's path such as `bodies[2].position[1]`, the value). `None`
/// when every number is fine or the text does not read as a RON value (the
/// typed parse reports those errors).
pub fn first_violation(source: &str) -> Option<(Vec<String>, String, f64)> {
    let value: ron::Value = ron::Options::default()
        .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
        .from_str(source)
        .ok()?;
    let mut anchors = Vec::new();
    let mut path = String::new();
    walk(&value, &mut anchors, &mut path)
}

fn walk(
    value: &ron::Value,
    anchors: &mut Vec<String>,
    path: &mut String,
) -> Option<(Vec<String>, String, f64)> {
    match value {
        ron::Value::Number(n) => {
            let x = n.into_f64();
            (!allowed(x)).then(|| (anchors.clone(), path.clone(), x))
        }
        ron::Value::Option(Some(inner)) => walk(inner, anchors, path),
        ron::Value::Map(map) => {
            for (key, item) in map.iter() {
                let (path_len, anchors_len) = (path.len(), anchors.len());
                match key {
                    ron::Value::String(key) => {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(key);
                        anchors.push(key.clone());
                    }
                    // A map keyed by a struct (a snapshot's impulses by
                    // contact): its values are numbers of the file too.
                    _ => path.push_str("[…]"),
                }
                let found = walk(item, anchors, path);
                path.truncate(path_len);
                anchors.truncate(anchors_len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        ron::Value::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                let (path_len, anchors_len) = (path.len(), anchors.len());
                // A newtype variant such as `Rigid((…))` reads as a
                // one-element sequence: no index in the path for it.
                if items.len() > 1 || !matches!(item, ron::Value::Map(_) | ron::Value::Seq(_)) {
                    path.push_str(&format!("[{i}]"));
                }
                if let Some(name) = name_of(item) {
                    anchors.push(format!("\"{name}\""));
                }
                let found = walk(item, anchors, path);
                path.truncate(path_len);
                anchors.truncate(anchors_len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        _ => None,
    }
}

/// The `name` field of a struct, which locates its entry in the text.
fn name_of(value: &ron::Value) -> Option<&str> {
    let ron::Value::Map(map) = value else {
        return None;
    };
    map.iter().find_map(|(k, v)| match (k, v) {
        (ron::Value::String(k), ron::Value::String(name)) if k == "name" => Some(name.as_str()),
        _ => None,
    })
}

/// Line and column of a violation's anchors in `source`.
pub fn position(source: &str, anchors: &[String]) -> (usize, usize) {
    let anchors: Vec<&str> = anchors.iter().map(String::as_str).collect();
    locate(source, &anchors)
}
