// Package tools owns the tool-family decision: which of the tools an agent
// harness offers a child the child's grant lets it see and call.
//
// A harness gives each child a catalogue of tools (read a file, search,
// edit, run a shell command, fetch a web page, start a sub-agent, call an
// MCP server, control the desktop). The grant's tools field names the
// families the child may have; this package maps a tool to the families it
// needs and decides, fail closed:
//
//   - a tool neither the built-in table nor a label classifies is never
//     granted (denial "unknown");
//   - an MCP tool needs the mcp family and a label (on the tool or its
//     server) naming a family the grant also has;
//   - a desktop tool needs desktop=on, the desktop family and a recorded
//     reason (denial "desktop-requires-reason" without one);
//   - every other tool needs its family in the grant (denial "not-granted").
//
// The same decision filters the catalogue a child is shown (Filter) and
// checks each call it makes (Decide), so visibility and execution cannot
// disagree. Everything here is a pure function of the tool, the grant and
// the labels; the package imports only the standard library (a test
// enforces it), so it can be trusted as a boundary. Loading the labels
// from files is package toolsfile's job; the grant's defaults and its
// ceiling are package grant's.
package tools
