//! The document again, as a tree of nodes that know where they are: only
//! read when an error must be placed that the parser did not place (a
//! check made after decoding, a type's own refusal).

use serde::Deserialize;
use serde_saphyr::{Location, Options, Spanned};

/// One step of a path into a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// A mapping's key (a struct's field, an enum's variant).
    Key(String),
    /// A sequence's index.
    Index(usize),
}

impl Step {
    /// A step of `serde_path_to_error`'s path; `None` for one it could not
    /// name.
    pub(super) fn of_serde(segment: &serde_path_to_error::Segment) -> Option<Step> {
        use serde_path_to_error::Segment;
        match segment {
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Map { key } | Segment::Enum { variant: key } => Some(Step::Key(key.clone())),
            Segment::Unknown => None,
        }
    }

    /// The steps of a path as errors write it: `a.b[2].c`.
    pub(super) fn parse(path: &str) -> impl Iterator<Item = Step> + '_ {
        path.split('.').flat_map(|part| {
            let (key, indices) = part
                .split_once('[')
                .map_or((part, ""), |(k, rest)| (k, rest));
            let key = (!key.is_empty()).then(|| Step::Key(key.to_string()));
            let indices = indices
                .split('[')
                .filter_map(|i| i.trim_end_matches(']').parse().ok())
                .map(Step::Index);
            key.into_iter().chain(indices)
        })
    }
}

/// Where the node at `path` is in `text`, or the deepest node on the way
/// to it (a field left out is placed at the object that lacks it).
pub(super) fn locate(
    text: &str,
    options: Options,
    path: impl Iterator<Item = Step>,
) -> Option<Location> {
    let tree = serde_saphyr::from_str_with_options::<Placed>(text, options).ok()?;
    let mut node = &tree;
    for step in path {
        let next = match (&step, &node.children) {
            (Step::Index(i), Children::Seq(items)) => items.get(*i),
            (Step::Key(key), Children::Map(entries)) => {
                entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
            }
            _ => None,
        };
        match next {
            Some(child) => node = child,
            None => break,
        }
    }
    Some(node.at)
}

/// A YAML node and where it is.
struct Placed {
    at: Location,
    children: Children,
}

enum Children {
    Map(Vec<(String, Placed)>),
    Seq(Vec<Placed>),
    Leaf,
}

impl<'de> Deserialize<'de> for Placed {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Children>::deserialize(de)?;
        Ok(Placed {
            at: spanned.referenced,
            children: spanned.value,
        })
    }
}

impl<'de> Deserialize<'de> for Children {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Children;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Children, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<serde_json::Value>()? {
                    let key = match key {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    entries.push((key, map.next_value::<Placed>()?));
                }
                Ok(Children::Map(entries))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Children, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<Placed>()? {
                    items.push(item);
                }
                Ok(Children::Seq(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_i128<E>(self, _: i128) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_u128<E>(self, _: u128) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_bytes<E>(self, _: &[u8]) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_none<E>(self) -> Result<Children, E> {
                Ok(Children::Leaf)
            }
            fn visit_some<D: serde::Deserializer<'de>>(self, de: D) -> Result<Children, D::Error> {
                <Children as Deserialize>::deserialize(de)
            }
        }
        de.deserialize_any(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_path_reads_as_its_steps() {
        let steps: Vec<Step> = Step::parse("kubernetes.rules[3].resources[1]").collect();
        assert_eq!(
            steps,
            [
                Step::Key("kubernetes".into()),
                Step::Key("rules".into()),
                Step::Index(3),
                Step::Key("resources".into()),
                Step::Index(1),
            ]
        );
        let nested: Vec<Step> = Step::parse("a[0][2]").collect();
        assert_eq!(
            nested,
            [Step::Key("a".into()), Step::Index(0), Step::Index(2)]
        );
    }

    #[test]
    fn a_path_is_placed_at_its_node_or_the_nearest_one_on_the_way() {
        let text = "a:\n  b: [x, {c: 1}]\n";
        let at = |p: &str| {
            locate(text, Options::default(), Step::parse(p)).map(|l| (l.line(), l.column()))
        };
        assert_eq!(at("a.b[1].c"), Some((2, 14)));
        assert_eq!(at("a.b[0]"), Some((2, 7)));
        // `d` is not there: the object that lacks it.
        assert_eq!(at("a.b[1].d"), Some((2, 10)));
    }
}
