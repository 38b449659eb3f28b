//! A Secret's `stringData`, as kube-apiserver's v1 conversion treats it on every write: each
//! value is written into `data`, base64-encoded, over a `data` value of the same key, and
//! `stringData` itself is never stored or returned.

use base64::Engine;
use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// Folds `body`'s `stringData` into its `data` if `info` is the core Secret; a `stringData`
/// that is not an object of strings is refused as kube-apiserver's decoder refuses it.
pub(crate) fn fold_string_data(info: &ResourceInfo, body: &mut Value) -> Result<(), ApiError> {
    if !(info.group.is_empty() && info.kind == "Secret") {
        return Ok(());
    }
    let Some(object) = body.as_object_mut() else {
        return Ok(());
    };
    let string_data = match object.remove("stringData") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: stringData must be an \
                 object of strings, not {other}"
            )));
        }
    };
    let data = object
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if data.is_null() {
        *data = Value::Object(serde_json::Map::new());
    }
    let Some(data) = data.as_object_mut() else {
        return Err(ApiError::bad_request(
            "Secret in version \"v1\" cannot be handled as a Secret: data must be an object",
        ));
    };
    for (key, value) in string_data {
        let Value::String(text) = value else {
            return Err(ApiError::bad_request(format!(
                "Secret in version \"v1\" cannot be handled as a Secret: stringData.{key} must \
                 be a string"
            )));
        };
        let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        data.insert(key, Value::String(encoded));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn core(kind: &str) -> std::sync::Arc<ResourceInfo> {
        crate::resources::Registry::with_builtins()
            .by_kind("", "v1", kind)
            .expect("a core resource")
    }

    fn secret_info() -> std::sync::Arc<ResourceInfo> {
        core("Secret")
    }

    #[test]
    fn string_data_goes_into_data_over_the_same_key_and_is_not_kept() {
        let mut body = json!({
            "data": {"a": "b2xk", "b": "Yg=="},
            "stringData": {"a": "new", "c": "ç"}
        });
        fold_string_data(&secret_info(), &mut body).unwrap();
        assert_eq!(
            body,
            json!({"data": {"a": "bmV3", "b": "Yg==", "c": "w6c="}})
        );
    }

    #[test]
    fn a_secret_without_data_gets_it_and_other_kinds_are_left_alone() {
        let mut body = json!({"stringData": {"k": "v"}, "data": null});
        fold_string_data(&secret_info(), &mut body).unwrap();
        assert_eq!(body, json!({"data": {"k": "dg=="}}));
        let config_map = core("ConfigMap");
        let mut body = json!({"stringData": {"k": "v"}});
        fold_string_data(&config_map, &mut body).unwrap();
        assert_eq!(body, json!({"stringData": {"k": "v"}}));
    }

    #[test]
    fn a_value_that_is_not_a_string_is_a_bad_request() {
        let mut body = json!({"stringData": {"k": 1}});
        let err = fold_string_data(&secret_info(), &mut body).unwrap_err();
        assert_eq!(err.code, 400);
    }
}
