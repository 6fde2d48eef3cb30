//! Roots: `roots/list` and `notifications/roots/list_changed`.

use crate::base::{NotificationParams, RequestParams};

crate::envelope::requests! {
    /// Asks the client for its roots.
    ListRootsRequest = ListRoots("roots/list", optional RequestParams) -> ListRootsResult;
}

crate::envelope::notifications! {
    /// Tells the server the client's roots changed.
    RootsListChangedNotification = RootsListChanged("notifications/roots/list_changed", optional NotificationParams);
}

crate::setters::wire_struct! {
    /// A directory or file the server may operate on.
    pub struct Root {
        /// The URI (`file://` for now).
        pub uri: String,
        /// A display name.
        name?: String => with_name,
        meta => with_meta,
    }
    /// A root at `uri`.
    new(uri: impl Into<String>);
}

crate::setters::wire_struct! {
    /// The answer to `roots/list`.
    pub struct ListRootsResult {
        meta => with_meta,
        /// The roots.
        pub roots: Vec<Root>,
    }
    /// A result with these roots.
    new(roots: Vec<Root>);
}
