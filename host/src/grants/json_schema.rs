//! What the grants' JSON Schema says beyond the serde shape: the checks
//! [`Grants::from_text`](super::Grants::from_text) makes after decoding
//! (`validate_rule`, `validate_pattern`, `ObjectRules::validate`), written
//! as schema keywords so that an editor refuses what a load would refuse.
//!
//! Each piece mirrors one check here; change them together. What a schema
//! cannot say (`write_burst_bytes` at least `max_body_bytes`, a role named
//! twice) is left to the load and said in the field's description.
//! pando-cli's `schema` tests hold the schema and the loader to the same
//! answers on a corpus of documents.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Value, json};

use super::{forbidden, known, request};

/// A DNS label (`check_dns_label`): 1 to 63 lowercase letters, digits and
/// `-`, a letter or digit at each end.
const LABEL: &str = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";

/// A namespace pattern (`validate_pattern(_, 63, false)`).
pub(crate) const NAMESPACE_PATTERN: &str = "^[a-z0-9*-]{1,63}$";

/// A name pattern, and a rule's `except` (`validate_pattern(_, 253, true)`).
pub(crate) const NAME_PATTERN: &str = "^[a-z0-9.*-]{1,253}$";

/// A DNS subdomain (`check_dns_subdomain`): at most 253 characters of
/// dot-separated DNS labels.
pub(crate) const DNS_SUBDOMAIN: &str = "^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$";

/// A DNS label, alone (`check_dns_label`).
pub(crate) const DNS_LABEL: &str = "^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$";

/// A label-key pattern (`validate_label_pattern`).
pub(crate) const LABEL_KEY_PATTERN: &str = "^[A-Za-z0-9._/*-]{1,317}$";

/// A subject's name: not one of the `system:` users or groups.
pub(crate) const NOT_SYSTEM: &str = "^(?!system:)";

/// A rule's `verbs`: at least one, each an RBAC verb (`Verb::from_rbac`);
/// `*` is refused.
pub(super) fn verbs(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = request::Verb::ALL.map(request::Verb::as_str).to_vec();
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": { "type": "string", "enum": names },
    })
}

/// A rule's `resources`: at least one, each a resource that
/// `validate_resource` accepts and `forbidden::never_grantable` does not
/// refuse. The groups Kubernetes serves are checked against the table of
/// their resources (`known`): those spellings are listed. Other groups are
/// taken as written (custom resources): a pattern, less the spellings and
/// subresources that are never granted.
pub(super) fn resources(_: &mut SchemaGenerator) -> Schema {
    let built_in: Vec<String> = known::spellings()
        .filter(|s| forbidden::never_grantable(s).is_none())
        .collect();
    let dotless: Vec<&str> = known::unchecked_dotless_groups().collect();
    let checked: Vec<String> = known::checked_dotted_groups()
        .into_iter()
        .map(|g| g.replace('.', "\\."))
        .collect();
    let never_subs: Vec<&str> = forbidden::never_subresources().collect();
    // `group/resource` or `group/resource/subresource`: the group a DNS
    // subdomain (its length looked ahead, as the labels' are bounded) that
    // is a dotless group the table has no rows for, or has a dot and is
    // none of the checked groups.
    let custom = format!(
        "^(?=[^/]{{1,253}}/)(?:{dotless}|(?!(?:{checked})/){LABEL}(?:\\.{LABEL})+)/{LABEL}(?:/(?!(?:{never})$){LABEL})?$",
        dotless = dotless.join("|"),
        checked = checked.join("|"),
        never = never_subs.join("|"),
    );
    let never: Vec<String> = forbidden::never_spellings().collect();
    json_schema!({
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "string",
            "anyOf": [
                { "enum": built_in },
                { "pattern": custom, "not": { "enum": never } },
            ],
        },
    })
}

/// A rule is namespaced (`namespaces`, at least one) or cluster-scoped
/// (`cluster: true`, no namespaces); only a cluster-scoped rule has `names`.
pub(super) fn rule_scope(schema: &mut Schema) {
    insert(
        schema,
        "if",
        json!({ "properties": { "cluster": { "const": true } }, "required": ["cluster"] }),
    );
    insert(
        schema,
        "then",
        json!({ "properties": { "namespaces": { "maxItems": 0 } } }),
    );
    insert(
        schema,
        "else",
        json!({
            "required": ["namespaces"],
            "properties": { "namespaces": { "minItems": 1 }, "names": { "maxItems": 0 } },
        }),
    );
}

/// A toleration (`validate_toleration`): `Exists` has no value; `Equal`,
/// which an absent operator is, needs a key.
pub(crate) fn toleration_operator(schema: &mut Schema) {
    insert(
        schema,
        "if",
        json!({ "properties": { "operator": { "const": "Exists" } }, "required": ["operator"] }),
    );
    insert(
        schema,
        "then",
        json!({ "properties": { "value": { "type": "null" } } }),
    );
    insert(
        schema,
        "else",
        json!({ "required": ["key"], "properties": { "key": { "type": "string" } } }),
    );
}

/// A binding's subject (`ObjectRules::validate`): a ServiceAccount has its
/// namespace, a User or Group none.
pub(crate) fn subject_namespace(schema: &mut Schema) {
    insert(
        schema,
        "if",
        json!({ "properties": { "kind": { "const": "ServiceAccount" } } }),
    );
    insert(
        schema,
        "then",
        json!({ "required": ["namespace"], "properties": { "namespace": { "type": "string" } } }),
    );
    insert(
        schema,
        "else",
        json!({ "properties": { "namespace": { "type": "null" } } }),
    );
}

fn insert(schema: &mut Schema, key: &str, value: Value) {
    schema.insert(key.to_string(), value);
}
