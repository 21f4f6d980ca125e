// Package toolsfile loads the tool labels the decision of package tools
// uses: the user's file, $XDG_CONFIG_HOME/wrun/tools.toml (or
// ~/.config/wrun/tools.toml), which gives MCP servers, MCP tools and
// other tools the built-in table does not know a family; and a
// repository's file, WORKDIR/.wrun/tools.toml, which may only narrow: its
// families are needed in addition to a tool's own and never classify a
// tool by themselves.
//
// It reads files and nothing else; the decision stays in package tools.
package toolsfile
