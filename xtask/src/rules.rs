//! `cargo xtask rules`: every rule ID the code and tests cite (R9, D5, H6, K3, S4, ...) must be
//! defined in `docs/behaviour.md`, so a contributor can look each one up from the repository.
//!
//! A definition is a bold rule head in the reference, `**R9 ...**`, or a bold range,
//! `**R9–R16 ...**`. A citation is a token of one or two capital letters and one or two digits
//! whose prefix the reference uses (`R`, `D`, `H`, ...), standing alone (not inside an
//! identifier). The test below runs the check on the workspace, so `cargo test --workspace`
//! (CI) fails on an undefined ID.
//!
//! It also refuses references to the project's issues: the word `issue` or `item` followed by a
//! number of one to three digits, in prose or in a name (a test named after an item). Issues are
//! not in the repository, so a reader cannot follow them; code cites a rule ID or a decision
//! record (`docs/decisions/NN-….md`) instead. Upstream issues (numbers of four digits or more,
//! `kubernetes#138842`) are not ours and pass.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The behaviour reference, relative to the workspace root.
pub(crate) const REFERENCE: &str = "docs/behaviour.md";

/// Directories never scanned: build output, trybuild scratch space, VCS metadata.
pub(crate) const SKIP_DIRS: &[&str] = &["target", "wip", ".git", "node_modules"];

/// Every `.rs` file under `dir`, outside [`SKIP_DIRS`].
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !SKIP_DIRS.contains(&name.as_str()) {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// A rule ID split into its prefix and number: `R9` is `("R", 9)`.
fn split_id(token: &str) -> Option<(&str, u32)> {
    let digits = token.find(|c: char| c.is_ascii_digit())?;
    let (prefix, number) = token.split_at(digits);
    let prefix_ok =
        (1..=2).contains(&prefix.len()) && prefix.chars().all(|c| c.is_ascii_uppercase());
    let number_ok = (1..=2).contains(&number.len()) && number.chars().all(|c| c.is_ascii_digit());
    if prefix_ok && number_ok {
        Some((prefix, number.parse().ok()?))
    } else {
        None
    }
}

/// The rule IDs `reference` defines: bold heads `**R9 ` and bold ranges `**R9–R16 `.
pub(crate) fn defined_ids(reference: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for head in reference.split("**").skip(1).step_by(2) {
        let first = head.split_whitespace().next().unwrap_or_default();
        let (from, to) = match first.split_once(['–', '-']) {
            Some((from, to)) => (from, to),
            None => (first.trim_end_matches(['.', ':']), ""),
        };
        let Some((prefix, start)) = split_id(from) else {
            continue;
        };
        let end = split_id(to)
            .filter(|(p, _)| *p == prefix)
            .map_or(start, |(_, n)| n);
        for n in start..=end.max(start) {
            ids.insert(format!("{prefix}{n}"));
        }
    }
    ids
}

/// The candidate rule IDs in `text` whose prefix is in `prefixes`, with their line numbers.
/// Rust's number types (`F64`, `U8`, ...) are not IDs.
pub(crate) fn cited_ids(text: &str, prefixes: &BTreeSet<String>) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let starts_word =
                i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if !(starts_word && bytes[i].is_ascii_uppercase()) {
                i += 1;
                continue;
            }
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            let token = &line[i..j];
            if let Some((prefix, number)) = split_id(token) {
                let number_type =
                    matches!(prefix, "F" | "I" | "U") && [8, 16, 32, 64].contains(&number);
                if prefixes.contains(prefix) && !number_type {
                    out.push((token.to_owned(), line_no + 1));
                }
            }
            i = j.max(i + 1);
        }
    }
    out
}

/// Every `.rs` file under `root` that can be read, in path order, as (path relative to `root`,
/// text).
fn sources(root: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(&file).ok()?;
            let place = file
                .strip_prefix(root)
                .unwrap_or(&file)
                .display()
                .to_string();
            Some((place, text))
        })
        .collect()
}

/// The IDs cited under `root` that `reference` does not define, each with its first place.
pub(crate) fn undefined(root: &Path, reference: &str) -> BTreeMap<String, String> {
    let defined = defined_ids(reference);
    let prefixes: BTreeSet<String> = defined
        .iter()
        .filter_map(|id| split_id(id).map(|(p, _)| p.to_owned()))
        .collect();
    let mut missing = BTreeMap::new();
    for (place, text) in sources(root) {
        for (id, line) in cited_ids(&text, &prefixes) {
            if !defined.contains(&id) {
                missing
                    .entry(id)
                    .or_insert_with(|| format!("{place}:{line}"));
            }
        }
    }
    missing
}

/// The references to this project's issues in `text`, with their line numbers: a word `issue` or
/// `item` (any case, plural too) that does not continue an identifier, then one of ` `, ` #`,
/// `#`, `_`, `-` or nothing, then a number of one to three digits (so a test name made of the
/// word and a number counts too).
pub(crate) fn issue_references(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let lower = line.to_ascii_lowercase();
        let bytes = lower.as_bytes();
        for word in ["issue", "item"] {
            let mut from = 0;
            while let Some(at) = lower[from..].find(word).map(|i| from + i) {
                from = at + word.len();
                let starts_word =
                    at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
                if !starts_word {
                    continue;
                }
                let mut j = at + word.len();
                if bytes.get(j) == Some(&b's') {
                    j += 1;
                }
                if bytes.get(j) == Some(&b' ') {
                    j += 1;
                    if bytes.get(j) == Some(&b'#') {
                        j += 1;
                    }
                } else if matches!(bytes.get(j), Some(b'#' | b'_' | b'-')) {
                    j += 1;
                }
                let digits = bytes[j.min(bytes.len())..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if (1..=3).contains(&digits) {
                    let end = (j + digits).min(line.len());
                    out.push((line[at..end].to_owned(), line_no + 1));
                }
            }
        }
    }
    out
}

/// Every reference to this project's issues under `root`, as `place: text`.
pub(crate) fn issue_reference_places(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (place, text) in sources(root) {
        for (reference, line) in issue_references(&text) {
            out.push(format!("{place}:{line}: {reference}"));
        }
    }
    out
}

/// `cargo xtask rules`: fails and lists each undefined ID with its first place, and each
/// reference to the project's issues.
pub(crate) fn check() -> anyhow::Result<()> {
    let root = crate::project_root();
    let path = root.join(REFERENCE);
    let reference =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let references = issue_reference_places(&root);
    if !references.is_empty() {
        for place in &references {
            eprintln!("xtask rules: {place}");
        }
        bail!(
            "{} references to issues, which are not in the repository: cite a rule ID ({REFERENCE}) or a decision record (docs/decisions/) instead",
            references.len()
        );
    }
    let missing = undefined(&root, &reference);
    if missing.is_empty() {
        eprintln!(
            "xtask rules: every cited rule ID is defined in {REFERENCE} ({} defined)",
            defined_ids(&reference).len()
        );
        return Ok(());
    }
    for (id, place) in &missing {
        eprintln!("xtask rules: {id} (first cited at {place}) is not defined in {REFERENCE}");
    }
    bail!(
        "{} rule IDs are cited but not defined in {REFERENCE}",
        missing.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_ranges_define_ids() {
        let doc = "- **R1 Backoff.** x\n- **R9–R16 Error classes.** y\n**K3 No reconcile.** **V1** \
                   and **not a rule** **M14-M16 hostile**";
        let ids = defined_ids(doc);
        for id in ["R1", "R9", "R12", "R16", "K3", "V1", "M14", "M15", "M16"] {
            assert!(ids.contains(id), "{id} in {ids:?}");
        }
        assert!(!ids.contains("R17") && !ids.contains("R2"));
    }

    #[test]
    fn citations_stand_alone_and_skip_number_types() {
        let prefixes: BTreeSet<String> = ["R", "F", "K"].iter().map(|s| (*s).to_owned()).collect();
        let text = "// R9 and (K3); not AR9 nor R9x nor F64\nlet x: R123 = F2;";
        let ids: Vec<String> = cited_ids(text, &prefixes)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["R9", "K3", "F2"]);
    }

    /// A sample with a `§` inside each keyword, so that this file passes its own check; the
    /// `§` is removed before use.
    fn sample(text: &str) -> String {
        text.replace('§', "")
    }

    #[test]
    fn references_to_our_issues_are_found_and_upstream_ones_pass() {
        let text = sample(
            "// iss§ue 14 it§em 2\n// It§ems 4 and 6; Iss§ue #7\nfn it§em12_f6() {}\n\
             // kubernetes#138842, iss§ue #138415, items, issues, the item-list, tissue 5",
        );
        let found: Vec<String> = issue_references(&text)
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        let expected = ["iss§ue 14", "it§em 2", "Iss§ue #7", "It§ems 4", "it§em12"].map(sample);
        assert_eq!(found, expected, "{found:?}");
        let lines: Vec<usize> = issue_references(&text)
            .into_iter()
            .map(|(_, l)| l)
            .collect();
        assert_eq!(lines, [1, 1, 2, 2, 3]);
    }

    /// The repository's own check: every rule ID cited in the workspace's code and tests is
    /// defined in docs/behaviour.md.
    #[test]
    fn every_cited_rule_id_is_defined_in_the_reference() {
        let root = crate::project_root();
        let reference =
            std::fs::read_to_string(root.join(REFERENCE)).expect("docs/behaviour.md exists");
        let missing = undefined(&root, &reference);
        assert!(
            missing.is_empty(),
            "rule IDs cited but not defined in {REFERENCE}: {missing:?}"
        );
    }
}
