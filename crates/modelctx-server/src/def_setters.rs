//! The setters every definition (tool, prompt, resource, resource template) has for its
//! entry in a listing, written once for the four kinds.

/// Generates, inside the `impl` of a definition whose listing entry is field `$entry`,
/// the setters the kinds share: description, caching hints, display title and, with
/// `icons`, the icons. The caller documents `cache_hints`, as each kind's hints cover
/// other requests. `meta` stays written out in each kind: the attribute macros pass it
/// a value of the application's, and a wrong one is reported at that method, which
/// reads better outside a macro.
macro_rules! entry_setters {
    ($entry:ident, icons; $(#[$cache_doc:meta])*) => {
        $crate::def_setters::entry_setters!($entry; $(#[$cache_doc])*);

        /// Sets the icons.
        #[must_use]
        pub fn icons(mut self, icons: Vec<modelctx_types::Icon>) -> Self {
            self.$entry.icons = Some(icons);
            self
        }
    };
    ($entry:ident; $(#[$cache_doc:meta])*) => {
        /// Sets the description.
        #[must_use]
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.$entry.description = Some(description.into());
            self
        }

        $(#[$cache_doc])*
        #[must_use]
        pub fn cache_hints(
            mut self,
            ttl: std::time::Duration,
            scope: modelctx_types::CacheScope,
        ) -> Self {
            self.cache = Some($crate::stateless::CacheHints::new(ttl, scope));
            self
        }

        /// Sets the display title.
        #[must_use]
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.$entry.title = Some(title.into());
            self
        }
    };
}

pub(crate) use entry_setters;
