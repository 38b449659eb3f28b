//! A line-based configuration file (`informer-gen.conf`) that fills a [`Builder`]; used by xtask and fixtures.
//!
//! ```text
//! # comment
//! include-group apps
//! include-kind apps/v1/Deployment        # core group: /v1/Pod
//! exclude-kind /v1/Event
//! compact-kind /v1/Pod                  # also generate the compact Pod (P1)
//! derive-source src/crd.rs crate::crd
//! crd crds/bar.yaml crate::crds
//! crd-types crds/widgets.yaml widgets   # types from the schemas, in generated module `widgets`
//! group-accessor networking.example.com example_networking
//! kind-accessor example.com feet foot_list
//! ```

use std::path::Path;

use crate::K8sOpenApi;
use crate::builder::Builder;
use crate::error::{Error, Errors};

/// The configuration file name looked up by [`builder_for_dir`].
pub const CONFIG_FILE: &str = "informer-gen.conf";

/// A builder rooted at `dir`, configured from `dir/informer-gen.conf`, reading built-ins from `k8s` if given.
pub fn builder_for_dir(dir: &Path, k8s: Option<K8sOpenApi>) -> Result<Builder, Errors> {
    let path = dir.join(CONFIG_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let mut builder = Builder::new();
    builder.root(dir);
    if let Some(k8s) = k8s {
        builder.k8s_openapi(k8s);
    }
    apply(&mut builder, &text, CONFIG_FILE).map_err(Errors)?;
    Ok(builder)
}

/// Applies every line of `text` (read from `path`, for errors) to `builder`; all bad lines are reported.
pub fn apply(builder: &mut Builder, text: &str, path: &str) -> Result<(), Vec<Error>> {
    let mut errors = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let gvk = |s: &str| -> Option<(String, String, String)> {
            let mut p = s.splitn(3, '/');
            Some((
                p.next()?.to_owned(),
                p.next()?.to_owned(),
                p.next()?.to_owned(),
            ))
        };
        let ok = match words.as_slice() {
            ["include-group", g] => {
                builder.include_group(g.trim_matches('"'));
                true
            }
            ["include-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.include_kind(&g, &v, &k))
                .is_some(),
            ["exclude-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.exclude_kind(&g, &v, &k))
                .is_some(),
            ["compact-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.compact_kind(&g, &v, &k))
                .is_some(),
            ["derive-source", p, m] => {
                builder.derive_source(p, m);
                true
            }
            ["crd", p, m] => {
                builder.crd_manifest(p, m);
                true
            }
            ["crd-types", p, m] => {
                builder.crd_types(p, m);
                true
            }
            ["group-accessor", g, a] => {
                builder.group_accessor(g.trim_matches('"'), a);
                true
            }
            ["kind-accessor", g, p, a] => {
                builder.kind_accessor(g.trim_matches('"'), p, a);
                true
            }
            _ => false,
        };
        if !ok {
            errors.push(Error::InvalidName {
                what: "configuration line",
                value: format!("{path}:{}: {line}", n + 1),
                reason: "unknown directive or wrong number of arguments".into(),
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_all_reported() {
        let mut b = Builder::new();
        let errs = apply(
            &mut b,
            "include-group apps\nbogus x\ncrd only-one\n",
            "c.conf",
        )
        .unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(errs[0].to_string().contains("c.conf:2"));
    }
}
