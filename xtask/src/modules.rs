//! `cargo xtask modules`: no module circles outside test code (ARCHITECTURE.md's invariant).
//!
//! For every crate of the workspace, each `.rs` file under `src/` (binaries under `src/bin/` are
//! crates of their own and skipped) is a module. A file depends on the modules its paths name:
//! `crate::a::b::Item` and `super::b::Item` in `use` trees (braces expanded) and in code, each
//! resolved to the deepest module file that exists. A child's use of an ancestor (`super::Item`,
//! `crate::Reexport`) is not an edge: a child may use its parent, as Rust's visibility intends.
//! A parent's `mod child;` is an edge. Test code is left out: `#[cfg(test)]` modules at the end
//! of a file and files named `tests.rs`; so is generated code (under a `generated/` folder). Any strongly connected set of two or more files is a
//! circle, and the check fails naming its files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::bail;

/// A module's path inside its crate: `["reflector", "cycle"]`; the crate root is empty.
type ModPath = Vec<String>;

/// The module path of `file`, relative to the crate's `src`; `None` outside a module tree.
fn module_path(src: &Path, file: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if !(parts.is_empty() && (stem == "lib" || stem == "main")) && stem != "mod" {
        parts.push(stem.to_owned());
    }
    Some(parts)
}

/// `text` without comments and without a trailing `#[cfg(test)] mod ...`.
fn non_test_code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        let code = &trimmed[..comment_start(trimmed)];
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Where a line's `//` comment starts: the first `//` outside a string literal (an even number
/// of quotes before it), so `"http://..."` does not end the code; the line's length if none.
fn comment_start(line: &str) -> usize {
    let mut from = 0;
    while let Some(pos) = line[from..].find("//") {
        let at = from + pos;
        if line[..at].matches('"').count().is_multiple_of(2) {
            return at;
        }
        from = at + 2;
    }
    line.len()
}

/// Expands a `use` tree (`super::{a, b::{c, d as e}, self}`) into its paths, each as segments.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    expand_into(tree.trim(), &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree.find('{') {
        None => {
            // `Error as E`: the path is the first word.
            let path = tree.split_whitespace().next().unwrap_or_default();
            let mut full = prefix.clone();
            full.extend(
                path.split("::")
                    .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                    .map(str::to_owned),
            );
            out.push(full);
        }
        Some(open) => {
            let head = tree[..open].trim().trim_end_matches("::");
            let inner = tree[open + 1..]
                .strip_suffix('}')
                .unwrap_or(&tree[open + 1..]);
            let before = prefix.len();
            prefix.extend(
                head.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            );
            for item in split_top_level(inner) {
                expand_into(item.trim(), prefix, out);
            }
            prefix.truncate(before);
        }
    }
}

/// `inner` split at commas outside braces.
fn split_top_level(inner: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0usize, 0usize, Vec::new());
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// Every path in `code` that starts with `crate` or `super`, as segments: the paths of `use`
/// trees, and paths written inline.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` trees, braces included.
    while let Some(i) = find_word(rest, "use") {
        let after = &rest[i + 3..];
        let Some(end) = after.find(';') else { break };
        let tree = after[..end].trim();
        if tree.starts_with("crate") || tree.starts_with("super") {
            out.extend(expand_use(tree));
        }
        rest = &after[end..];
    }
    // Inline paths: `crate::a::b` and `super::a` outside `use`.
    let bytes = code.as_bytes();
    for word in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(word) {
            let at = from + pos;
            from = at + word.len();
            let boundary = at == 0
                || !(bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':');
            if !boundary {
                continue;
            }
            let len = code[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(code.len() - at);
            let path = &code[at..at + len];
            out.push(
                path.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    out
}

/// The byte offset of `word` standing alone in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(pos) = text[from..].find(word) {
        let at = from + pos;
        let end = at + word.len();
        let before_ok =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let after_ok = bytes.get(end).is_some_and(|b| b.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = end;
    }
    None
}

/// The module `path` (segments after `crate`/`super`s) names from module `from` of a crate with
/// `modules`: the deepest existing module along it.
fn resolve(from: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let (mut base, mut segs): (ModPath, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("super") => {
            // A `mod.rs` is its directory's module, so `super` is one level up for every file.
            let mut base = from.clone();
            base.pop();
            (base, &path[1..])
        }
        _ => return None,
    };
    while segs.first().is_some_and(|s| s == "super") {
        base.pop();
        segs = &segs[1..];
    }
    let mut best = base.clone();
    let mut current = base;
    for seg in segs {
        current.push(seg.clone());
        if modules.contains(&current) {
            best = current.clone();
        } else {
            break;
        }
    }
    Some(best)
}

/// The circles (strongly connected sets of two or more modules) of one crate rooted at `src`.
pub(crate) fn circles_of(src: &Path) -> Vec<Vec<String>> {
    let mut files = Vec::new();
    crate::rules::rust_files(src, &mut files);
    let mut modules: BTreeMap<ModPath, PathBuf> = BTreeMap::new();
    for file in files {
        // Test modules, and generated code (its generator owns its shape).
        if file.file_name().is_some_and(|n| n == "tests.rs")
            || file.iter().any(|part| part == "generated")
        {
            continue;
        }
        if let Some(m) = module_path(src, &file) {
            modules.insert(m, file);
        }
    }
    let names: BTreeSet<ModPath> = modules.keys().cloned().collect();
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (m, file) in &modules {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let code = non_test_code(&text);
        let out = edges.entry(m.clone()).or_default();
        for path in paths(&code) {
            if let Some(target) = resolve(m, &path, &names)
                && target != *m
                && !m.starts_with(&target)
            {
                out.insert(target);
            }
        }
        // `mod child;` declarations: the parent depends on its children.
        for line in code.lines() {
            let decl = line
                .trim()
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(child) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                let mut c = m.clone();
                c.push(child.trim().to_owned());
                if names.contains(&c) {
                    out.insert(c);
                }
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|set| set.len() > 1)
        .map(|set| {
            set.iter()
                .map(|m| {
                    modules
                        .get(m)
                        .and_then(|f| f.strip_prefix(src).ok())
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect()
}

/// Tarjan's strongly connected components of `edges`.
fn strongly_connected(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a ModPath) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            if let Some(next) = self.edges.get(v) {
                for w in next {
                    let Some((w, _)) = self.edges.get_key_value(w) else {
                        continue;
                    };
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w]);
                        self.low.insert(v, low);
                    } else if self.on_stack.contains(w) {
                        let low = self.low[v].min(self.index[w]);
                        self.low.insert(v, low);
                    }
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                self.out.push(set);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

/// The circles of every workspace crate, as `crate: file, file, ...`.
pub(crate) fn workspace_circles(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return found;
    };
    let mut crates: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    crates.sort();
    for dir in crates {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for circle in circles_of(&dir.join("src")) {
            found.push(format!("{name}/src: {}", circle.join(" -> ")));
        }
    }
    found
}

/// `cargo xtask modules`.
pub(crate) fn check() -> anyhow::Result<()> {
    let circles = workspace_circles(&crate::project_root());
    if circles.is_empty() {
        eprintln!("xtask modules: no module circles outside test code");
        return Ok(());
    }
    for c in &circles {
        eprintln!("xtask modules: circle in {c}");
    }
    bail!(
        "{} module circles (see ARCHITECTURE.md, Invariants)",
        circles.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(s: &str) -> Vec<String> {
        s.split("::").map(str::to_owned).collect()
    }

    #[test]
    fn use_trees_expand_braces_renames_and_self() {
        let got = expand_use("super::{io::{ActiveWatch, Io}, Error as E, self, list}");
        assert_eq!(
            got,
            [
                seg("super::io::ActiveWatch"),
                seg("super::io::Io"),
                seg("super::Error"),
                seg("super"),
                seg("super::list"),
            ]
        );
    }

    #[test]
    fn paths_are_found_in_use_and_inline_but_not_in_comments_or_tests() {
        let code = non_test_code(
            "use crate::shard::Shard;\n// crate::ignored::X\nfn f() { crate::key::ObjectKey::parse(\"a\"); }\n\
             let u = \"http://x\"; crate::after::Url; // crate::trailing::Y\n\
             #[cfg(test)]\nmod tests { use crate::test_only::T; }\n",
        );
        let got = paths(&code);
        assert!(got.contains(&seg("crate::shard::Shard")), "{got:?}");
        assert!(
            got.contains(&seg("crate::key::ObjectKey::parse")),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|p| p.contains(&"ignored".to_owned())),
            "{got:?}"
        );
        assert!(
            !got.iter().any(|p| p.contains(&"test_only".to_owned())),
            "{got:?}"
        );
    }

    #[test]
    fn a_circle_between_siblings_is_found_and_a_child_using_its_parent_is_not() {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("r")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod r;\n").unwrap();
        std::fs::write(src.join("a.rs"), "use crate::b::B;\npub struct A;\n").unwrap();
        std::fs::write(src.join("b.rs"), "use crate::a::A;\npub struct B;\n").unwrap();
        std::fs::write(src.join("r/mod.rs"), "mod c;\npub struct Ctx;\n").unwrap();
        std::fs::write(src.join("r/c.rs"), "use super::Ctx;\n").unwrap();
        let circles = circles_of(&src);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(circles.len(), 1, "{circles:?}");
        let mut files = circles[0].clone();
        files.sort();
        assert_eq!(files, ["a.rs", "b.rs"]);
    }

    /// The repository's own check (decision record 14): no crate of the workspace has a module
    /// circle outside test code.
    #[test]
    fn the_workspace_has_no_module_circles() {
        let circles = workspace_circles(&crate::project_root());
        assert!(circles.is_empty(), "module circles: {circles:#?}");
    }
}
