//! Secrets: never a service-account token. A Secret of type
//! `kubernetes.io/service-account-token` is filled by the token controller
//! with a long-lived token of the account it names: an adapter that may
//! write Secrets would mint itself that account's credentials.

use serde_json::Value;

use super::Violation;
use super::fields::{get, shown, string};

/// The type the token controller fills.
pub(crate) const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";

/// Checks a Secret being written.
pub(crate) fn check(secret: &Value) -> Result<(), Violation> {
    let fail = |problem: String| Violation {
        rule: "secrets.service-account-token",
        statement: "Secrets are never service-account tokens".into(),
        field: "type".into(),
        problem,
        grant: None,
    };
    let ty = string(secret, "type").map_err(fail)?;
    if ty == Some(TOKEN_TYPE) {
        let account = get(secret, "metadata")
            .and_then(|m| get(m, "annotations"))
            .and_then(|a| a.get("kubernetes.io/service-account.name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(fail(format!(
            "is `{TOKEN_TYPE}` (a token of service account `{}`)",
            shown(account)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_secret_is_a_service_account_token() {
        check(&json!({"type": "Opaque", "data": {}})).expect("opaque");
        check(&json!({"type": "kubernetes.io/dockerconfigjson"})).expect("pull secret");
        check(&json!({})).expect("untyped is Opaque");
        let v = check(&json!({"type": TOKEN_TYPE, "metadata": {"annotations": {
            "kubernetes.io/service-account.name": "default"}}}))
        .unwrap_err();
        assert_eq!(
            (v.rule, v.field.as_str()),
            ("secrets.service-account-token", "type")
        );
        assert!(v.problem.contains("`default`"), "{}", v.problem);
        assert!(check(&json!({"type": 7})).is_err());
    }
}
