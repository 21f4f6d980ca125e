package tools

// Builtin returns the family of a tool name the common agent harnesses
// use, and whether the name is in the table. Names match exactly (case
// and all): a name spelt any other way is not classified, so it is not
// granted. The table covers Claude Code's tools, the names of the Codex,
// Gemini CLI, OpenCode, Cursor and Cline harnesses, and the
// computer-use tools of screenshot, keyboard and mouse control, and the
// hosted tools OpenAI's Responses and Gemini's APIs name by their type or
// key. A name several harnesses share means the same kind of act in each.
//
// A harness's control tools (a to-do list, a plan, a question to the
// user, the end of the task) are Control. A tool that writes something a
// later session loads is Edit, as a start-up file is: Gemini CLI's
// save_memory appends to the GEMINI.md every later session reads. One that
// starts a sub-agent is Spawn, as Cline's new_task does.
//
// MCP tools are never classified here: their family comes from labels.
func Builtin(name string) (Family, bool) {
	switch name {
	case "Read", "NotebookRead", "LS", "read", "list", "ls",
		"read_file", "read_many_files", "list_dir", "list_directory",
		"list_files", "view_image", "list_code_definition_names":
		return Read, true
	case "Grep", "Glob", "grep", "glob", "grep_files", "grep_search",
		"file_search", "search_files", "search_file_content",
		"codebase_search":
		return Search, true
	case "Write", "Edit", "MultiEdit", "NotebookEdit", "write", "edit",
		"multiedit", "patch", "apply_patch", "write_file", "replace",
		"edit_file", "search_replace", "delete_file", "write_to_file",
		"replace_in_file", "str_replace_editor",
		"str_replace_based_edit_tool", "save_memory":
		return Edit, true
	case "Bash", "BashOutput", "KillShell", "KillBash", "bash", "shell",
		"shell_command", "exec_command", "write_stdin", "local_shell",
		"run_shell_command", "run_terminal_cmd", "execute_command":
		return Shell, true
	case "WebFetch", "WebSearch", "webfetch", "websearch", "web_fetch",
		"web_search", "google_web_search", "browser_action",
		"web_search_preview", "googleSearch", "google_search",
		"googleSearchRetrieval", "google_search_retrieval", "urlContext",
		"url_context":
		return Web, true
	case "Task", "Agent", "task", "spawn_agent", "codebase_investigator",
		"new_task":
		return Spawn, true
	case "TodoWrite", "TodoRead", "todowrite", "todoread", "write_todos",
		"update_todo_list", "ExitPlanMode", "update_plan",
		"plan_mode_respond", "AskUserQuestion", "ask_followup_question",
		"attempt_completion":
		return Control, true
	case "computer", "computer_use", "screenshot", "take_screenshot",
		"keyboard", "key", "type", "keyboard_type", "mouse", "mouse_move",
		"mouse_click", "left_click", "right_click", "middle_click",
		"double_click", "left_click_drag", "scroll", "cursor_position",
		"computer_use_preview":
		return Desktop, true
	}
	return "", false
}
