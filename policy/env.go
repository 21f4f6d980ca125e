package policy

import (
	"slices"
	"sort"
	"strings"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/verify"
)

// desktopEnv reach the user's desktop session or terminal multiplexer.
var desktopEnv = []string{
	"DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET", "XAUTHORITY",
	"DBUS_SESSION_BUS_ADDRESS", "SESSION_MANAGER", "XDG_SESSION_COOKIE",
	"GNOME_KEYRING_CONTROL", "AT_SPI_BUS_ADDRESS", "PULSE_SERVER",
	"TMUX", "TMUX_PANE", "STY", "KITTY_LISTEN_ON", "KITTY_WINDOW_ID",
	"WEZTERM_UNIX_SOCKET", "ZELLIJ", "ZELLIJ_SESSION_NAME", "VSCODE_IPC_HOOK_CLI",
}

// agentEnv reach the user's credential agents.
var agentEnv = []string{
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "KRB5CCNAME",
	"GOOGLE_APPLICATION_CREDENTIALS", "AWS_ACCESS_KEY_ID", "AWS_PROFILE",
}

// secretWords mark a variable as a credential when its name contains one.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY",
	"ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL", "AUTH_KEY"}

// scrubReason says why a variable is removed, or "" to keep it.
func scrubReason(name string, g grant.Grant) string {
	if strings.HasPrefix(name, "_WRUN_") {
		return "wrun's internal variable"
	}
	if g.Desktop == grant.DesktopOff && slices.Contains(desktopEnv, name) {
		return "reaches the desktop session or terminal multiplexer (desktop=off)"
	}
	if slices.Contains(agentEnv, name) {
		return "reaches a credential agent or names credentials"
	}
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return "looks like a credential (name contains " + w + ")"
		}
	}
	return ""
}

// childEnv computes the child's environment: the invoking one, scrubbed,
// plus wrun's own variables and the verify scope's changes.
func childEnv(g grant.Grant, h Host, o Options, extra []verify.EnvVar) (set, unset []EnvVar, env []string) {
	vals := map[string]string{}
	var order []string
	for _, kv := range h.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := vals[k]; !dup {
			order = append(order, k)
		}
		vals[k] = v
	}
	removed := map[string]bool{}
	for _, k := range order {
		if slices.Contains(o.KeepEnv, k) {
			continue
		}
		if why := scrubReason(k, g); why != "" {
			unset = append(unset, EnvVar{Name: k, Why: why})
			removed[k] = true
		}
	}
	setVar := func(name, value, why string) {
		if _, had := vals[name]; !had {
			order = append(order, name)
		}
		delete(removed, name)
		vals[name] = value
		set = append(set, EnvVar{Name: name, Value: value, Why: why})
	}
	setVar("WRUN_GRANT", g.String(), "the effective grant, for nested wrun and for the child to read")
	if o.Ceiling != "" {
		setVar("WRUN_CEILING", o.Ceiling, "the ceiling no nested wrun or approval may exceed")
	}
	if h.Sandbox != "" {
		setVar("WRUN_SANDBOX", h.Sandbox, "the enforcement in use")
	}
	if g.Files != grant.FilesWrite {
		setVar("GIT_OPTIONAL_LOCKS", "0", "the workspace is read-only: git status must not try to take the index lock to refresh it")
	}
	if h.TempDir != "" {
		for _, n := range []string{"TMPDIR", "TMP", "TEMP"} {
			setVar(n, h.TempDir, "the private temp dir")
		}
	}
	for _, e := range extra {
		setVar(e.Name, e.Value, e.Why)
	}
	for _, k := range order {
		if !removed[k] {
			env = append(env, k+"="+vals[k])
		}
	}
	sort.Slice(unset, func(i, j int) bool { return unset[i].Name < unset[j].Name })
	return set, unset, env
}
