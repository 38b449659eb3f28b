//! Conventions as tests: every hand-written `.rs` starts with `//!`; generated folders hold only generated files.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use informer_gen::GENERATED_MARKER;

    use crate::project_root;

    /// Directories never scanned: build output, trybuild scratch space, VCS metadata.
    const SKIP_DIRS: &[&str] = &["target", "wip", ".git", "node_modules"];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

    /// Output folders owned by the generator.
    fn is_generated_dir(path: &Path) -> bool {
        path.components().any(|c| {
            let c = c.as_os_str();
            c == "generated" || c == "expected"
        })
    }

    #[test]
    fn hand_written_files_start_with_a_module_doc() {
        let root = project_root();
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let offenders: Vec<String> = files
            .iter()
            .filter(|p| !is_generated_dir(p))
            .filter(|p| !std::fs::read_to_string(p).is_ok_and(|t| t.starts_with("//!")))
            .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
            .collect();
        assert!(
            offenders.is_empty(),
            "files without a leading `//!` line:\n  {}",
            offenders.join("\n  ")
        );
    }

    #[test]
    fn generated_folders_hold_only_generated_files() {
        let root = project_root();
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let offenders: Vec<String> = files
            .iter()
            .filter(|p| is_generated_dir(p))
            .filter(|p| !std::fs::read_to_string(p).is_ok_and(|t| t.starts_with(GENERATED_MARKER)))
            .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
            .collect();
        assert!(
            offenders.is_empty(),
            "hand-written files under a generated folder:\n  {}",
            offenders.join("\n  ")
        );
    }
}
