//! `cargo xtask rules`: every rule ID the code and tests cite (R9, D5, H6, K3, S4, ...) must be
//! defined in `docs/behaviour.md`, so a contributor can look each one up from the repository.
//!
//! A definition is a bold rule head in the reference, `**R9 ...**`, or a bold range,
//! `**R9–R16 ...**`. A citation is a token of one or two capital letters and one or two digits
//! whose prefix the reference uses (`R`, `D`, `H`, ...), standing alone (not inside an
//! identifier). The test below runs the check on the workspace, so `cargo test --workspace`
//! (CI) fails on an undefined ID.

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

/// The IDs cited under `root` that `reference` does not define, each with its first place.
pub(crate) fn undefined(root: &Path, reference: &str) -> BTreeMap<String, String> {
    let defined = defined_ids(reference);
    let prefixes: BTreeSet<String> = defined
        .iter()
        .filter_map(|id| split_id(id).map(|(p, _)| p.to_owned()))
        .collect();
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    let mut missing = BTreeMap::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (id, line) in cited_ids(&text, &prefixes) {
            if !defined.contains(&id) {
                let place = file.strip_prefix(root).unwrap_or(&file).display();
                missing
                    .entry(id)
                    .or_insert_with(|| format!("{place}:{line}"));
            }
        }
    }
    missing
}

/// `cargo xtask rules`: fails and lists each undefined ID with its first place.
pub(crate) fn check() -> anyhow::Result<()> {
    let root = crate::project_root();
    let path = root.join(REFERENCE);
    let reference =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
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

    /// The repository's own check: every rule ID cited in the workspace's code and tests is
    /// defined in docs/behaviour.md (issue 28).
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
