//! Table columns (`kubectl get`): the standard columns of common built-in kinds, as
//! kube-apiserver's printers define them, a CRD's `additionalPrinterColumns` (with a JSONPath
//! subset), and `Name`/`Age` for everything else.

use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::state::Shared;

mod builtin;
mod crd;

/// One column of a Table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    /// Header (`Ready`); kubectl upper-cases it.
    pub(crate) name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub(crate) ty: String,
    /// OpenAPI format (`name` for the Name column).
    pub(crate) format: String,
    /// Help text.
    pub(crate) description: String,
    /// 0 for the default view, 1 and more for `-o wide`.
    pub(crate) priority: i64,
    /// How a cell is computed.
    pub(crate) source: Source,
}

/// Where a column's cell comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// `metadata.name`.
    Name,
    /// The age from `metadata.creationTimestamp`, as kubectl shows it (`5m`).
    Age,
    /// A built-in printer's cell, by column position.
    Builtin(usize),
    /// A CRD column: a JSONPath into the object.
    JsonPath(String),
}

/// The columns a resource's Tables have.
pub(crate) fn columns(sh: &Shared, info: &ResourceInfo) -> Vec<Column> {
    if info.custom {
        return crd::columns(sh, info);
    }
    let Some(defs) = builtin::defs(&info.group, &info.kind) else {
        return vec![name_column(), age_column()];
    };
    let mut out = vec![name_column()];
    for (i, (name, ty, priority, description)) in defs.iter().enumerate() {
        out.push(Column {
            name: (*name).to_owned(),
            ty: (*ty).to_owned(),
            format: String::new(),
            description: (*description).to_owned(),
            priority: *priority,
            source: if *name == "Age" {
                Source::Age
            } else {
                Source::Builtin(i)
            },
        });
    }
    out
}

pub(super) fn name_column() -> Column {
    Column {
        name: "Name".into(),
        ty: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names".into(),
        priority: 0,
        source: Source::Name,
    }
}

pub(super) fn age_column() -> Column {
    Column {
        name: "Age".into(),
        ty: "string".into(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
        priority: 0,
        source: Source::Age,
    }
}

/// The cells of one object's row.
pub(crate) fn cells(info: &ResourceInfo, cols: &[Column], obj: &Value, now: i64) -> Vec<Value> {
    let builtin = if info.custom {
        Vec::new()
    } else {
        builtin::cells(&info.group, &info.kind, obj, now)
    };
    cols.iter()
        .map(|c| match &c.source {
            Source::Name => obj
                .pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::Null),
            Source::Age => Value::String(age(obj.pointer("/metadata/creationTimestamp"), now)),
            Source::Builtin(i) => builtin.get(*i).cloned().unwrap_or(Value::Null),
            Source::JsonPath(path) => {
                crd::cell(&c.ty, crd::jsonpath(obj, path).first().copied(), now)
            }
        })
        .collect()
}

/// kubectl's age of a timestamp (`duration.HumanDuration`), `<unknown>` without one.
pub(super) fn age(ts: Option<&Value>, now: i64) -> String {
    let Some(t) = ts
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".into();
    };
    human_duration(now - t.as_second())
}

/// Go's `k8s.io/apimachinery/pkg/util/duration.HumanDuration`, in whole seconds.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let d = (hours / 24) % 365;
        return if d == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{d}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        for (secs, s) in [
            (0, "0s"),
            (119, "119s"),
            (125, "2m5s"),
            (600, "10m"),
            (3 * 3600 + 120, "3h2m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400 + 86400 * 3, "3y3d"),
        ] {
            assert_eq!(human_duration(secs), s, "{secs}");
        }
    }
}
