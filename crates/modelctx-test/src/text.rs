//! Text extraction from tool results.

use modelctx_types::CallToolResult;

/// The text of a tool result: its text content blocks joined, other blocks left out.
///
/// ```
/// use modelctx_test::text_of;
/// use modelctx_types::CallToolResult;
///
/// assert_eq!(text_of(&CallToolResult::text("hello")), "hello");
/// ```
pub fn text_of(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text()).collect()
}
