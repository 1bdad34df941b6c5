//! `pando-wrong-version`: exports `pando:runtime/adapter@0.9.0` (its own WIT,
//! not the SDK's), a version the host does not serve. The host's tests expect
//! it refused with a message naming 0.9.0 and the versions served.

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "wrong-version",
    });
}

struct WrongVersion;

impl bindings::exports::pando::runtime::adapter::Guest for WrongVersion {
    fn info() -> String {
        "wrong-version".into()
    }
}

bindings::export!(WrongVersion with_types_in bindings);
