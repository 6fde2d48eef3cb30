//! The test registry: a conformance test is an async fn of a [`Connector`] plus the
//! requirement IDs it covers. Each test file lists its tests in a plain function
//! (`pub(crate) fn tests() -> Vec<Test>`), and `tests/conformance/main.rs` concatenates the
//! lists: no proc-macro, no link-time registration, and an async fn left out of its
//! list is dead code, which the workspace lints turn into an error.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::LocalBoxFuture;

use crate::connect::Connector;

type RunFn = dyn Fn(Connector) -> LocalBoxFuture<'static, ()> + Send + Sync;

/// One registered conformance test.
#[derive(Clone)]
pub struct Test {
    name: String,
    ids: Vec<&'static str>,
    run: Arc<RunFn>,
}

impl Test {
    /// A test named `name` (`<area>::<function>`) covering requirements `ids`. Prefer
    /// the [`conformance_test!`](crate::conformance_test!) macro, which derives the name
    /// from the module and function.
    pub fn new<F, Fut>(name: impl Into<String>, ids: &[&'static str], run: F) -> Self
    where
        F: Fn(Connector) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + 'static,
    {
        Self {
            name: name.into(),
            ids: ids.to_vec(),
            run: Arc::new(move |connect| run(connect).boxed_local()),
        }
    }

    /// The test's name: the trial name without its `[transport]` suffix.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The requirement IDs it covers.
    pub fn ids(&self) -> &[&'static str] {
        &self.ids
    }

    /// Starts the test over `connect`.
    pub fn run(&self, connect: Connector) -> LocalBoxFuture<'static, ()> {
        (self.run)(connect)
    }
}

impl fmt::Debug for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Test")
            .field("name", &self.name)
            .field("ids", &self.ids)
            .finish_non_exhaustive()
    }
}

/// Registers an async fn as a conformance test covering the given requirement IDs:
/// `conformance_test!(call_tool_returns_text, ["tools:call:content:text"])`. The test's name is
/// `<module>::<function>` — the module path without the test binary's own name — so a
/// function in `tests/conformance/tools.rs` becomes `tools::call_tool_returns_text`.
#[macro_export]
macro_rules! conformance_test {
    // The same function registered again under another name, for other requirements
    // (those of the first registration reach fewer cells).
    ($name:ident => $f:ident, [$($id:expr),* $(,)?]) => {
        $crate::Test::new(
            $crate::__test_name(::core::module_path!(), ::core::stringify!($name)),
            &[$($id),*],
            $f,
        )
    };
    ($f:ident, [$($id:expr),* $(,)?]) => {
        $crate::Test::new(
            $crate::__test_name(::core::module_path!(), ::core::stringify!($f)),
            &[$($id),*],
            $f,
        )
    };
}

/// The name [`conformance_test!`] gives a function: its module path, less the crate's own name.
#[doc(hidden)]
pub fn __test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sample(_connect: Connector) {}

    #[test]
    fn the_macro_names_a_test_after_its_module_and_function() {
        let t = crate::conformance_test!(sample, ["a:b", "a:c"]);
        assert_eq!(t.name(), "registry::tests::sample");
        assert_eq!(t.ids(), ["a:b", "a:c"]);
        assert_eq!(__test_name("conformance", "f"), "f");
        assert_eq!(__test_name("conformance::tools", "f"), "tools::f");
    }
}
