//! The capabilities the host lends an adapter, one module each, all of one
//! shape ([`Capability`]): the `pando:runtime` interfaces it lends, what an
//! adapter's instances share (made once at load), what one instance's store
//! holds for it, and its linker set-up. Its imports are implemented on a
//! [`View`]: the store's [`Env`] and the capability's own state, nothing of
//! the others'. The list at the bottom is the one place that names them
//! all: a new capability is its module and one line there.

pub mod call;
pub(crate) mod env;
pub mod events;
pub(crate) mod held;
pub mod kubernetes;
pub mod log;
pub mod ratelimit;
pub mod streams;
pub(crate) mod tasks;

use std::marker::PhantomData;
use std::sync::Arc;

use wasmtime::Engine;
use wasmtime::component::{HasData, Linker};
use wasmtime_wasi::WasiView;

use crate::bindings::Line;
use crate::grants::Grants;
use crate::kubecache::WatchCache;
use crate::limits::Limits;
use env::Env;

/// What a capability is given at load to make what the adapter's instances
/// share.
pub(crate) struct Setup<'a> {
    pub(crate) limits: &'a Limits,
    pub(crate) grants: &'a Grants,
    /// The cluster the host was given, if any.
    pub(crate) kubernetes: Option<&'a kube::Client>,
    /// The watch-fed cache reads may be answered from, if any.
    pub(crate) kubernetes_cache: Option<&'a Arc<WatchCache>>,
}

/// A store's data as the capabilities see it: the [`Env`] and their
/// states. The runtime's store state implements it; no capability names
/// that type.
pub(crate) trait StoreData: Send + 'static {
    /// The environment and the capabilities' states, borrowed apart.
    fn parts(&mut self) -> (&mut Env, &mut Instances);
}

/// One capability's field of [`Instances`].
pub(crate) trait Field<C: Capability> {
    fn field(&mut self) -> &mut C::Instance;
}

/// The view of capability `C` into a store: what its linker getter is.
pub(crate) fn view<T: StoreData, C: Capability>(data: &mut T) -> View<'_, C>
where
    Instances: Field<C>,
{
    let (env, instances) = data.parts();
    View {
        env,
        this: instances.field(),
    }
}

/// One capability the host lends.
pub(crate) trait Capability: Sized + 'static {
    /// The `pando:runtime` interfaces it lends, by name without package or
    /// version (what the load-time check asks of an import).
    const INTERFACES: &'static [&'static str];
    /// What the adapter's instances share, made once at load.
    type Shared: Send + Sync + 'static;
    /// What one instance's store holds for it.
    type Instance: Send + 'static;

    /// Why an adapter with `grants` may not import this capability, if it
    /// may not (asked at load, before anything is compiled).
    fn refusal(grants: &Grants) -> Option<String> {
        let _ = grants;
        None
    }

    /// Made once when the adapter is loaded.
    fn shared(setup: &Setup<'_>) -> Self::Shared;
    /// Made for each new instance.
    fn instance(shared: &Self::Shared) -> Self::Instance;
    /// Adds its interfaces to the linker (every adapter gets the same
    /// linker: what an adapter may use was decided by the check at load and
    /// by its grants, not by what is linked).
    fn add_to_linker<T: StoreData>(linker: &mut Linker<T>) -> wasmtime::Result<()>;

    /// Why it does not lend its interfaces to `pando:runtime@0.2.0`
    /// adapters, if it does not.
    fn refusal_v0_2() -> Option<&'static str> {
        None
    }

    /// Adds its `pando:runtime@0.2.0` interfaces to the 0.2 linker.
    fn add_to_linker_v0_2<T: StoreData>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        let _ = linker;
        Ok(())
    }
}

/// What a capability's imports work on.
pub(crate) struct View<'a, C: Capability> {
    pub(crate) env: &'a mut Env,
    pub(crate) this: &'a mut C::Instance,
}

/// wasmtime's [`HasData`] for a capability: its imports see a [`View`].
pub(crate) struct Lend<C>(PhantomData<C>);

impl<C: Capability> HasData for Lend<C> {
    type Data<'a> = View<'a, C>;
}

/// The [`Capability`] impl of one with no state of its own (what it lends
/// lives in the store's [`Env`]) and no 0.2.0 interface: `$name` lends
/// `$interface` through the generated module `$wit`; `$v0_2` says why
/// 0.2.0 has no such interface.
macro_rules! stateless_capability {
    ($name:ident, $interface:literal, $wit:ident, $v0_2:literal) => {
        impl $crate::capability::Capability for $name {
            const INTERFACES: &'static [&'static str] = &[$interface];
            type Shared = ();
            type Instance = ();

            fn refusal_v0_2() -> Option<&'static str> {
                Some($v0_2)
            }

            fn shared(_: &$crate::capability::Setup<'_>) {}

            fn instance((): &()) {}

            fn add_to_linker<T: $crate::capability::StoreData>(
                linker: &mut wasmtime::component::Linker<T>,
            ) -> wasmtime::Result<()> {
                $wit::add_to_linker::<T, $crate::capability::Lend<Self>>(
                    linker,
                    $crate::capability::view::<T, Self>,
                )
            }
        }
    };
}
pub(crate) use stateless_capability;

/// Interfaces of `pando:runtime` that hold only types: importing them lends
/// nothing.
const TYPE_ONLY: &[&str] = &["types"];

macro_rules! capabilities {
    ($($field:ident: $cap:ty),* $(,)?) => {
        /// What an adapter's instances share, one field per capability.
        pub(crate) struct Shared {
            $(pub(crate) $field: <$cap as Capability>::Shared,)*
        }

        /// What one store holds, one field per capability.
        pub(crate) struct Instances {
            $(pub(crate) $field: <$cap as Capability>::Instance,)*
        }

        impl Shared {
            /// Every capability's shared state, at load.
            pub(crate) fn new(setup: &Setup<'_>) -> Self {
                Shared { $($field: <$cap as Capability>::shared(setup),)* }
            }

            /// Every capability's state for a new instance.
            pub(crate) fn instances(&self) -> Instances {
                Instances { $($field: <$cap as Capability>::instance(&self.$field),)* }
            }
        }

        $(
            impl Field<$cap> for Instances {
                fn field(&mut self) -> &mut <$cap as Capability>::Instance {
                    &mut self.$field
                }
            }
        )*

        fn add_all<T: StoreData>(linker: &mut Linker<T>, line: Line) -> wasmtime::Result<()> {
            match line {
                Line::V0_1 => { $(<$cap as Capability>::add_to_linker(linker)?;)* }
                Line::V0_2 => { $(<$cap as Capability>::add_to_linker_v0_2(linker)?;)* }
            }
            Ok(())
        }

        /// Whether `interface` of `pando:runtime` is lent, and by which
        /// capability (its field name here), to an adapter of `line` with
        /// `grants` (`None`: any grants, as `inspect` asks).
        pub(crate) fn lending(interface: &str, line: Line, grants: Option<&Grants>) -> Lending {
            $(
                if <$cap as Capability>::INTERFACES.contains(&interface) {
                    if line == Line::V0_2
                        && let Some(why) = <$cap as Capability>::refusal_v0_2()
                    {
                        return Lending::NotServed(why);
                    }
                    return match grants.and_then(<$cap as Capability>::refusal) {
                        Some(why) => Lending::NotGranted(why),
                        None => Lending::Lent(stringify!($field)),
                    };
                }
            )*
            if TYPE_ONLY.contains(&interface) {
                return Lending::TypesOnly;
            }
            Lending::Unknown
        }
    };
}

capabilities! {
    call: call::Call,
    log: log::Log,
    events: events::Events,
    streams: streams::Streams,
    kubernetes: kubernetes::Kubernetes,
}

/// What the load-time check learns of one `pando:runtime` import.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Lending {
    /// Lent by this capability.
    Lent(&'static str),
    /// An interface of types only: nothing to lend.
    TypesOnly,
    /// A capability lends it, but not to an adapter with these grants: why.
    NotGranted(String),
    /// A capability lends it, but not in this contract line: why.
    NotServed(&'static str),
    /// No capability lends it.
    Unknown,
}

/// A linker with WASI 0.2 (inert: see `state.rs`) and every capability's
/// imports of `line`'s `pando:runtime`. A 0.2.0 adapter also gets WASI
/// 0.3's clocks, the only WASI 0.3 interface its contract uses (a Rust
/// guest's standard library still imports WASI 0.2's).
pub(crate) fn linker<T: StoreData + WasiView>(
    engine: &Engine,
    line: Line,
) -> wasmtime::Result<Linker<T>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    if line == Line::V0_2 {
        wasmtime_wasi::p3::clocks::add_to_linker(&mut linker)?;
    }
    add_all(&mut linker, line)?;
    Ok(linker)
}
