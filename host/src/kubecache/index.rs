//! The names of a store's objects by namespace, so that a namespaced list
//! reads its own namespace's objects rather than scanning the whole store
//! (an `observe` lists three kinds in one namespace; `in-use` lists claims
//! in every app namespace).
//!
//! It follows the same watcher events as the store it indexes, after the
//! store has applied them: a list in between may miss an object the store
//! already has, or name one the store has dropped (the reader skips it).
//! Either is a read a moment older, which `resourceVersion=0` allows.

use std::collections::{BTreeSet, HashMap};

use kube::Resource;
use kube::runtime::watcher::Event;

/// Namespace → names of the objects in it.
type Names = HashMap<String, BTreeSet<String>>;

/// The index of one store.
#[derive(Debug, Default)]
pub(crate) struct NamespaceIndex {
    current: Names,
    /// Built during a (re-)list, swapped in when it is complete, as the
    /// store swaps its own buffer: objects deleted while the watch was down
    /// leave the index with the list that no longer has them.
    relisting: Option<Names>,
}

impl NamespaceIndex {
    /// Follows one watcher event.
    pub(crate) fn follow<K: Resource>(&mut self, event: &Event<K>) {
        match event {
            Event::Init => self.relisting = Some(Names::new()),
            Event::InitApply(obj) => {
                if let Some(names) = self.relisting.as_mut() {
                    insert(names, obj);
                }
            }
            Event::InitDone => {
                if let Some(names) = self.relisting.take() {
                    self.current = names;
                }
            }
            Event::Apply(obj) => insert(&mut self.current, obj),
            Event::Delete(obj) => {
                let meta = obj.meta();
                if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name)
                    && let Some(names) = self.current.get_mut(ns)
                {
                    names.remove(name);
                    if names.is_empty() {
                        self.current.remove(ns);
                    }
                }
            }
        }
    }

    /// The names in `ns`, in order.
    pub(crate) fn names(&self, ns: &str) -> Vec<String> {
        self.current
            .get(ns)
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default()
    }
}

fn insert<K: Resource>(names: &mut Names, obj: &K) {
    let meta = obj.meta();
    if let (Some(ns), Some(name)) = (&meta.namespace, &meta.name) {
        names.entry(ns.clone()).or_default().insert(name.clone());
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    use super::*;

    fn pod(ns: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    #[test]
    fn applies_and_deletes_keep_each_namespace_s_names() {
        let mut index = NamespaceIndex::default();
        index.follow(&Event::Apply(pod("a", "web")));
        index.follow(&Event::Apply(pod("a", "db")));
        index.follow(&Event::Apply(pod("b", "web")));
        index.follow(&Event::Apply(pod("a", "web")));
        assert_eq!(index.names("a"), ["db", "web"]);
        assert_eq!(index.names("b"), ["web"]);
        assert!(index.names("c").is_empty());

        index.follow(&Event::Delete(pod("a", "web")));
        index.follow(&Event::Delete(pod("b", "web")));
        index.follow(&Event::Delete(pod("b", "never-seen")));
        assert_eq!(index.names("a"), ["db"]);
        assert!(index.names("b").is_empty());
        assert!(
            !index.current.contains_key("b"),
            "an empty namespace is dropped"
        );
    }

    #[test]
    fn a_relist_replaces_the_index_only_when_complete() {
        let mut index = NamespaceIndex::default();
        index.follow(&Event::Apply(pod("a", "gone-while-down")));
        index.follow(&Event::Apply(pod("a", "kept")));

        index.follow(&Event::<Pod>::Init);
        index.follow(&Event::InitApply(pod("a", "kept")));
        index.follow(&Event::InitApply(pod("b", "new")));
        // Until the list is complete, reads see the index as it was.
        assert_eq!(index.names("a"), ["gone-while-down", "kept"]);
        assert!(index.names("b").is_empty());

        index.follow(&Event::<Pod>::InitDone);
        assert_eq!(index.names("a"), ["kept"]);
        assert_eq!(index.names("b"), ["new"]);
    }

    #[test]
    fn cluster_scoped_objects_are_not_indexed() {
        let mut index = NamespaceIndex::default();
        let mut p = pod("a", "x");
        p.metadata.namespace = None;
        index.follow(&Event::Apply(p));
        assert!(index.current.is_empty());
    }
}
