//! G10: a generated struct of the `metav1.Condition` shape implements the runtime's `Condition`
//! (so `informer_runtime::conditions` works on `status.conditions`); a near miss does not.

use informer_gen::Builder;

/// A string field, a date-time field.
const STRING: &str = r#"{"type": "string"}"#;
const TIME: &str = r#"{"type": "string", "format": "date-time"}"#;

/// An array of objects with these `(name, schema)` properties, `type` and `status` required.
fn list_of(properties: &[(&str, &str)]) -> String {
    let properties: Vec<String> = properties
        .iter()
        .map(|(name, schema)| format!("\"{name}\": {schema}"))
        .collect();
    format!(
        r#"{{"type": "array", "items": {{"type": "object", "required": ["status", "type"],
            "properties": {{{}}}}}}}"#,
        properties.join(", ")
    )
}

/// A CRD `Widget` (JSON, which YAML reads) whose status holds conditions in controller-gen's
/// `metav1.Condition` shape with an enum `status` (`conditions`), conditions with only the
/// three required fields (`phases`), and two near misses: one with a field a condition does not
/// have (`probes`), one without `lastTransitionTime` (`events`).
fn widgets() -> String {
    let conditions = list_of(&[
        ("lastTransitionTime", TIME),
        ("message", STRING),
        (
            "observedGeneration",
            r#"{"type": "integer", "format": "int64"}"#,
        ),
        ("reason", r#"{"type": "string", "minLength": 1}"#),
        (
            "status",
            r#"{"type": "string", "enum": ["True", "False", "Unknown"]}"#,
        ),
        ("type", STRING),
    ])
    // controller-gen's required list: reason stays a required string.
    .replace(
        r#"["status", "type"]"#,
        r#"["lastTransitionTime", "message", "reason", "status", "type"]"#,
    );
    let phases = list_of(&[
        ("lastTransitionTime", TIME),
        ("status", STRING),
        ("type", STRING),
    ]);
    let probes = list_of(&[
        ("lastProbeTime", TIME),
        ("lastTransitionTime", TIME),
        ("status", STRING),
        ("type", STRING),
    ]);
    let events = list_of(&[("status", STRING), ("type", STRING)]);
    format!(
        r#"{{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {{"name": "widgets.example.com"}},
  "spec": {{"group": "example.com", "scope": "Namespaced",
    "names": {{"kind": "Widget", "plural": "widgets"}},
    "versions": [{{"name": "v1", "served": true, "storage": true,
      "schema": {{"openAPIV3Schema": {{"type": "object", "properties": {{"status": {{
        "type": "object",
        "properties": {{"conditions": {conditions}, "phases": {phases}, "probes": {probes},
          "events": {events}}}}}}}}}}}}}]}}}}"#
    )
}

fn generated() -> String {
    let dir = std::env::temp_dir().join(format!("informer-gen-conditions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("widgets.yaml"), widgets()).expect("write the CRD");
    let generated = Builder::new()
        .root(&dir)
        .crd_types("widgets.yaml", "widget_types")
        .generate()
        .expect("generates");
    generated
        .files()
        .values()
        .cloned()
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn g10_condition_shaped_structs_implement_condition_and_near_misses_do_not() {
    // The invocations are filled across lines: compare with single spaces.
    let text = generated().split_whitespace().collect::<Vec<_>>().join(" ");
    let invocation = |name: &str| format!("rt::impl_condition! {{ {name} {{");
    for has in ["WidgetStatusConditions", "WidgetStatusPhases"] {
        assert!(
            text.contains(&invocation(has)),
            "missing the Condition impl of `{has}` in:\n{text}"
        );
    }
    for lacks in ["WidgetStatusProbes", "WidgetStatusEvents"] {
        assert!(
            !text.contains(&invocation(lacks)),
            "unexpected Condition impl for {lacks}"
        );
    }
    // Every role, the enum status written through its listed variants, else the catch-all one;
    // the runtime's macro reads each field's shape (required `reason`, optional generation) from
    // its type.
    assert!(text.contains(
        "WidgetStatusConditions { type = r#type, status = status as WidgetStatusConditionsStatus \
         { \"True\" => True, \"False\" => False, \"Unknown\" => Unknown; else Other }, \
         last_transition_time = last_transition_time, reason = reason, message = message, \
         observed_generation = observed_generation, }"
    ));
    // Only the required roles, a string status.
    assert!(text.contains(
        "WidgetStatusPhases { type = r#type, status = status, \
         last_transition_time = last_transition_time, }"
    ));
}
