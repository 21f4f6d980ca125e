package verify

import (
	"fmt"
	"strings"

	"github.com/wrun-dev/wrun/internal/envlist"
)

// Verify is for checking work, not publishing it: with the network on for
// git fetch, a git push would publish. So under shell=verify (unless the
// workspace is writable, files=write) every git command of the child gets
// url.wrun-verify-refuses-push::.pushInsteadOf="" in its configuration
// (GIT_CONFIG_COUNT/KEY/VALUE, which git reads in every process, however
// it was started: by name, by full path, through an alias or a script).
// Every push URL starts with the empty string, so git rewrites it to
// "wrun-verify-refuses-push::URL" and hands the push, whatever its
// transport (git://, ssh, http, file), to the remote helper of that name,
// git-remote-wrun-verify-refuses-push: a link to wrun in the git shim's
// directory, which prints PushRefusal and fails. Without the shim git
// finds no such helper and fails too, naming it. The git shim also
// refuses `git push` and `git send-pack` themselves (a remote with its own
// pushurl is not rewritten by pushInsteadOf; send-pack reads no remote).
//
// This is a guard against an honest mistake, not a boundary: with the
// network open, a determined child can speak git's protocol itself.

// PushRefusedHelper names the remote helper every push is sent to under
// verify; it also marks the refusal in the child's output, where escalate
// finds it.
const PushRefusedHelper = "wrun-verify-refuses-push"

// EnvGitNoPush, set to 1, makes the git shim refuse git push and git
// send-pack.
const EnvGitNoPush = "WRUN_GIT_NO_PUSH"

// pushRefusalConfig is the git configuration that sends every push to
// PushRefusedHelper.
func pushRefusalConfig() [2]string {
	return [2]string{"url." + PushRefusedHelper + "::.pushInsteadOf", ""}
}

// PushRefusal is the message of a refused push to dest (a remote or URL;
// "" when unknown). It starts with "wrun: " and names PushRefusedHelper,
// so that escalate recognises it in the child's output.
func PushRefusal(dest string) string {
	if dest != "" {
		dest = " to " + dest
	}
	return fmt.Sprintf("wrun: git push%s refused (%s): shell=verify checks work and does not publish it; a push needs a grant with files=write and network=on", dest, PushRefusedHelper)
}

// ShimRefusesPush reports whether the git shim refuses the git command
// args (git's arguments) in env: under EnvGitNoPush, a push or send-pack.
// dest is the remote or URL it names, if any.
func ShimRefusesPush(args []string, env []string) (dest string, refused bool) {
	if v, _ := envlist.Lookup(env, EnvGitNoPush); v != "1" {
		return "", false
	}
	sub, rest := gitSubcommand(args)
	if sub != "push" && sub != "send-pack" {
		return "", false
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") {
			return a, true
		}
	}
	return "", true
}

// gitSubcommand returns git's subcommand in args (after its global
// options) and the arguments that follow it; "" when there is none.
func gitSubcommand(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		switch a {
		case "--":
			return "", nil
		case "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix":
			i++ // the option's value is the next argument
		}
	}
	return "", nil
}
