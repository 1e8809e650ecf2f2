//! Finding a field's line and column in scene text, so validation errors (which
//! happen after deserialization, where spans are gone) can point at it.

/// Follows `anchors` through `source`: each anchor is searched for after the
/// previous one's position (an anchor that is not found is skipped). Returns the
/// 1-based line and column of the last anchor found, or 1:1.
pub fn locate(source: &str, anchors: &[&str]) -> (usize, usize) {
    let mut from = 0;
    let mut found = None;
    for anchor in anchors {
        if let Some(offset) = find_token(&source[from..], anchor) {
            found = Some(from + offset);
            from += offset + anchor.len();
        }
    }
    match found {
        Some(offset) => {
            let before = &source[..offset];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            (line, column)
        }
        None => (1, 1),
    }
}

/// The first occurrence of `token` that is not inside a comment and, for a bare
/// word, not part of a longer identifier.
fn find_token(text: &str, token: &str) -> Option<usize> {
    let word = token.chars().all(|c| c.is_alphanumeric() || c == '_');
    let mut start = 0;
    while let Some(pos) = text[start..].find(token) {
        let at = start + pos;
        let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
        let in_comment = text[line_start..at].contains("//");
        let before = text[..at].chars().next_back();
        let after = text[at + token.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if !in_comment && !(word && (ident(before) || ident(after))) {
            return Some(at);
        }
        start = at + token.len();
    }
    None
}
