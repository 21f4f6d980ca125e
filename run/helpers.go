package run

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wrun-dev/wrun/internal/ptyrelay"
	"github.com/wrun-dev/wrun/proxy"
	"github.com/wrun-dev/wrun/verify"
)

// ServeHelpers plays the parts a sandbox starts wrun's own binary again
// for, when this process was started as one of them: git's shim (started
// as "git", first in a verify sandbox's PATH), the remote helper every
// push under verify goes to (it refuses it), an interactive run's
// terminal monitor, the Go cache program (GOCACHEPROG), and under
// network=hosts git's proxy command (git:// through wrun's proxy) and ssh
// command (which says ssh is not reached). Then it does
// not return: the process ends with that part's status. Otherwise it
// returns at once, having done nothing.
//
// A program that embeds this package and calls Run calls ServeHelpers
// first in main, before anything else, since the sandbox starts the
// running binary (os.Executable, /proc/self/exe), whichever it is, for
// these parts.
func ServeHelpers() {
	ptyrelay.MaybeMonitor()
	if len(os.Args) == 0 {
		return
	}
	switch filepath.Base(os.Args[0]) {
	case "git":
		os.Exit(gitShim(os.Args[1:]))
	case "git-remote-" + verify.PushRefusedHelper:
		os.Exit(pushRefused(os.Args[1:]))
	case verify.GitProxyHelper:
		os.Exit(gitProxy(os.Args[1:]))
	case verify.SSHRefusedHelper:
		os.Exit(sshRefused(os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == verify.GoCacheProgCommand {
		os.Exit(goCacheProg(os.Args[2:]))
	}
}

// gitShim is the binary run as `git` inside a verify sandbox: it sets
// git's object directory for this one command (verify.GitShimEnv) and
// replaces itself with the real git. It returns only on failure.
func gitShim(args []string) int {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = "/"
	}
	if dest, refused := verify.ShimRefusesPush(args, os.Environ()); refused {
		verify.RecordPushRefusal(os.Environ(), dest)
		fmt.Fprintln(os.Stderr, verify.PushRefusal(dest))
		return 128
	}
	env, realGit := verify.GitShimEnv(args, cwd, os.Environ())
	if realGit == "" {
		fmt.Fprintf(os.Stderr, "wrun (as git): %s is not set, so there is no git to run\n", verify.EnvGitReal)
		return 127
	}
	err = syscall.Exec(realGit, append([]string{"git"}, args...), env)
	fmt.Fprintf(os.Stderr, "wrun (as git): running %s: %v\n", realGit, err)
	return 126
}

// pushRefused is the binary run as git's remote helper
// git-remote-wrun-verify-refuses-push, to which verify sends every push
// (verify.PushRefusedHelper): git runs it with the remote and the URL; it
// refuses the push.
func pushRefused(args []string) int {
	dest := ""
	if len(args) > 0 {
		dest = args[len(args)-1]
	}
	verify.RecordPushRefusal(os.Environ(), dest)
	fmt.Fprintln(os.Stderr, verify.PushRefusal(dest))
	return 128
}

// goCacheProg is the binary run as the go command's GOCACHEPROG inside a
// verify sandbox: --private CACHE (written) and --read CACHE (read only,
// repeatable), as verify's GOCACHEPROG line gives them.
func goCacheProg(args []string) int {
	fs := flag.NewFlagSet(verify.GoCacheProgCommand, flag.ContinueOnError)
	private := fs.String("private", "", "the cache to write")
	var readOnly list
	fs.Var(&readOnly, "read", "a cache to read only (repeatable)")
	err := fs.Parse(args)
	if err == nil && (*private == "" || fs.NArg() > 0) {
		err = errors.New("want --private CACHE [--read CACHE]..., and nothing else")
	}
	if err == nil {
		err = verify.ServeGoCache(os.Stdin, os.Stdout, *private, readOnly)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wrun (as GOCACHEPROG):", err)
		return 1
	}
	return 0
}

// list is a repeatable string flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

// gitProxy is the binary run as git's core.gitProxy command
// (verify.GitProxyHelper) under network=hosts: git runs it with HOST and
// PORT of a git:// remote, and speaks the git protocol over its stdin and
// stdout, which it tunnels through wrun's proxy (HTTPS_PROXY, as wrun set
// it) with a CONNECT. The proxy decides; a refused host is its denial.
func gitProxy(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "wrun (as git's proxy command): want HOST PORT")
		return 2
	}
	px := os.Getenv("HTTPS_PROXY")
	if px == "" {
		px = os.Getenv("https_proxy")
	}
	if err := proxy.Tunnel(px, net.JoinHostPort(args[0], args[1]), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sshRefused is the binary run as git's core.sshCommand under
// network=hosts (verify.SSHRefusedHelper): ssh does not go through wrun's
// proxy, so it says so instead of failing to resolve the host.
func sshRefused(args []string) int {
	// ssh [-o OPTION] [-p PORT] [-4|-6] HOST COMMAND, as git runs it.
	host := "the remote"
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-o" || a == "-p" {
			i++
			continue
		}
		if a != "" && a[0] != '-' {
			host = a
			break
		}
	}
	fmt.Fprintln(os.Stderr, verify.SSHRefusal(host))
	return 255
}
