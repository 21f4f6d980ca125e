package verify

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// gitChildConfig is the configuration every git command of the child gets
// (GIT_CONFIG_COUNT/KEY/VALUE): no automatic maintenance, which would
// repack (the objects are read-only), expire reflogs, or detach a
// background process that outlives the run.
func gitChildConfig() [][2]string {
	return [][2]string{
		{"gc.auto", "0"},
		{"maintenance.auto", "false"},
		{"fetch.writeCommitGraph", "false"},
		// The alternate is the repository itself, whose refs git knows:
		// asking for them again costs a git process per fetch.
		{"core.alternateRefsCommand", "true"},
	}
}

// gitScope: what `git fetch` and `git merge-tree --write-tree` write, and
// nothing else. New objects go to a quarantine of this run (the existing
// ones are never writable: Landlock's rights are inherited by everything
// below a rule, and write plus remove on objects/ would let the child
// rewrite or replace any object); refs, their reflogs and FETCH_HEAD are
// written in place. Config, hooks, HEAD, the index and packed-refs stay
// read-only.
//
// The configuration the child's git commands need is added to cfg.
func gitScope(in Input, repo *Repo, s *Scope, cfg *[][2]string) {
	if repo == nil {
		return
	}
	if in.WorkspaceWritable && within(repo.GitDir, in.Workdir) && within(repo.CommonDir, in.Workdir) {
		return // the repository is writable with the workspace (config and hooks protected)
	}
	common, gitDir := repo.CommonDir, repo.GitDir
	// files=write in a linked worktree whose git dirs lie outside the
	// workspace: the worktree's own state is the workspace's (worktree).
	linked := in.WorkspaceWritable && repo.DotGitIsFile && within(gitDir, filepath.Join(common, "worktrees")) && gitDir != common
	s.ReadOnly = append(s.ReadOnly,
		ReadOnly{Path: filepath.Join(common, "config"), Tool: "git", Why: whyGitConfig},
		ReadOnly{Path: filepath.Join(common, "hooks"), Tool: "git", Why: "git hooks: a planted hook runs at the next unsandboxed commit, merge or checkout"},
		ReadOnly{Path: filepath.Join(common, "objects"), Tool: "git", Why: "git objects: a rewritten existing object changes history under every ref that reaches it; new objects go to a quarantine and are checked against their names before wrun moves them in"})
	if !linked {
		s.ReadOnly = append(s.ReadOnly,
			ReadOnly{Path: filepath.Join(gitDir, "HEAD"), Tool: "git", Why: "HEAD, the checked-out branch: a fetch or merge-tree never moves it"},
			ReadOnly{Path: filepath.Join(gitDir, "index"), Tool: "git", Why: "the index (staging area): what the next unsandboxed commit records"})
	}
	s.ReadOnly = append(s.ReadOnly,
		ReadOnly{Path: filepath.Join(common, "packed-refs"), Tool: "git", Why: "packed refs: rewriting them takes a new packed-refs.lock beside config and hooks, a right Landlock can only give for the whole repository; so `git fetch --prune` of a packed ref and `git pack-refs` are denied (use `git fetch --no-prune`)"},
	)
	for _, v := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_INDEX_FILE"} {
		if in.Getenv(v) != "" {
			s.Notes = append(s.Notes, "git: "+v+" is set, so git may work on another repository than "+repo.WorkTree+"; nothing of a repository is writable")
			return
		}
	}
	if err := repo.check(); err != nil {
		s.Notes = append(s.Notes, "git: nothing of the repository is writable: "+err.Error())
		return
	}
	quarantines := filepath.Join(common, quarantineDirName)
	q := ""
	inheritedQ := in.Getenv(EnvGitQuarantine)
	if in.Getenv(EnvGitCommonDir) != common || filepath.Dir(inheritedQ) != quarantines {
		inheritedQ = ""
	}
	switch obj := in.Getenv("GIT_OBJECT_DIRECTORY"); {
	case inheritedQ != "" && (obj == "" || obj == inheritedQ):
		// An enclosing wrun's quarantine of this repository: write into it
		// too; the enclosing wrun settles it.
		q = inheritedQ
	case obj != "" || in.Getenv("GIT_ALTERNATE_OBJECT_DIRECTORIES") != "":
		s.Notes = append(s.Notes, "git: GIT_OBJECT_DIRECTORY or GIT_ALTERNATE_OBJECT_DIRECTORIES is set (not to a wrun quarantine of "+common+"); nothing of the repository is writable")
		return
	case in.Getenv("WRUN_GRANT") != "":
		// Inside another wrun that made no quarantine here: its grant
		// decides, and it may not let this one create one.
		s.Notes = append(s.Notes, "git: inside another wrun that gave git no quarantine in "+common+"; nothing of the repository is writable")
		return
	case !dirWritable(common):
		s.Notes = append(s.Notes, "git: "+common+" is not writable by wrun, so it cannot hold a quarantine; nothing of the repository is writable")
		return
	default:
		q = filepath.Join(quarantines, runID(in))
		s.Prepare = append(s.Prepare, Step{Kind: StepGitQuarantineOpen, Repo: common, Dir: q,
			Why: "receives the objects git writes during the run; listed in objects/info/alternates first, so refs to them are valid at every moment"})
		s.Finish = append(s.Finish, Step{Kind: StepGitQuarantineClose, Repo: common, Dir: q,
			Why: "checks each new object against its name, moves the good ones into objects/, then unregisters and removes the quarantine"})
	}
	s.Writable = append(s.Writable, Path{Path: q, Dir: true, Tool: "git", Beneath: common,
		Why: "quarantine for new git objects (GIT_OBJECT_DIRECTORY), moved into the repository after the run"})
	if reftable(common) {
		s.Writable = append(s.Writable, Path{Path: filepath.Join(common, "reftable"), Dir: true, Tool: "git", Beneath: common,
			Why: "ref updates of git fetch (reftable)"})
	} else {
		// What a fetch updates: remote-tracking refs and tags. Local
		// branches (refs/heads) and their reflogs stay read-only: a
		// verifying child has no business moving them.
		s.Writable = append(s.Writable,
			Path{Path: filepath.Join(common, "refs", "remotes"), Dir: true, Create: true, Tool: "git", Beneath: common,
				Why: "remote-tracking refs git fetch updates, with their *.lock files"},
			Path{Path: filepath.Join(common, "refs", "tags"), Dir: true, Create: true, Tool: "git", Beneath: common,
				Why: "tags git fetch brings in, with their *.lock files"},
			Path{Path: filepath.Join(common, "logs", "refs", "remotes"), Dir: true, Create: true, Tool: "git", Beneath: common,
				Why: "reflogs of the remote-tracking refs git fetch updates"})
		if linked {
			branchScope(repo, s)
		} else {
			s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: filepath.Join(common, "refs", "heads"), Tool: "git",
				Why: "local branches and their reflogs: a verifying child must not move them (fetch into refs/remotes, or grant write)"})
		}
	}
	if linked {
		worktreeScope(repo, s)
	}
	s.Writable = append(s.Writable, Path{Path: filepath.Join(gitDir, "FETCH_HEAD"), Create: true, Tool: "git", Beneath: gitDir,
		Why: "what git fetch fetched (FETCH_HEAD)"})
	if q == filepath.Join(quarantines, runID(in)) {
		// What wrun creates for the run (above, and in sandbox/linux) goes
		// again when the run left it empty; what was there stays.
		for _, p := range []string{filepath.Join(gitDir, "FETCH_HEAD"), filepath.Join(common, "logs", "refs", "remotes"),
			filepath.Join(common, "logs", "refs"), filepath.Join(common, "logs"), filepath.Join(common, "refs", "remotes"), filepath.Join(common, "refs", "tags")} {
			if _, err := os.Lstat(p); err == nil {
				continue
			}
			s.Finish = append(s.Finish, Step{Kind: StepRemoveIfEmpty, Dir: p, Why: "created empty for the run; removed if the run left it so"})
		}
	}

	if gitShim(in, common, q, s) && in.HostsProxy {
		dir := shimDir(in)
		*cfg = append(*cfg,
			[2]string{"core.gitProxy", filepath.Join(dir, GitProxyHelper)},
			[2]string{"core.sshCommand", filepath.Join(dir, SSHRefusedHelper)})
		s.Notes = append(s.Notes, "git: git:// remotes go through wrun's proxy (core.gitProxy, a CONNECT to it); ssh remotes are not reached under network=hosts (core.sshCommand says so): use an https:// remote, or --grant verify,network=on")
	}
	*cfg = append(*cfg, gitChildConfig()...)
}

// GitProxyHelper is the name under which wrun, run as git's core.gitProxy
// command (HOST PORT), tunnels a git:// connection through the
// network=hosts proxy with a CONNECT; SSHRefusedHelper the name under
// which, run as core.sshCommand, it says that ssh remotes are not
// reached under network=hosts. Both are links to wrun in the git shim's
// directory.
const (
	GitProxyHelper   = "wrun-git-proxy"
	SSHRefusedHelper = "wrun-ssh-refused"
)

// SSHRefusal is what the ssh helper says about host.
func SSHRefusal(host string) string {
	return "wrun: git over ssh (" + host + ") does not go through wrun's proxy, so network=hosts (verify's default) does not reach it: use an https:// or git:// remote, or --grant verify,network=on"
}

// shimDir is the git shim's directory (gitShim).
func shimDir(in Input) string {
	tmp := in.TempDir
	if tmp == "" {
		tmp = "$TMPDIR"
	}
	return filepath.Join(tmp, "wrun-git")
}

// reftable reports whether the repository keeps its refs in a reftable.
func reftable(common string) bool {
	v, _ := gitConfigValue(filepath.Join(common, "config"), "extensions", "refstorage")
	return strings.EqualFold(v, "reftable")
}

// worktreeScope makes a linked worktree's own git dir writable under
// files=write (its index, HEAD, logs, ORIG_HEAD, COMMIT_EDITMSG, its
// per-worktree refs): it is the worktree's state as .git is a main
// checkout's. What git reads there that runs programs or redirects it
// (config.worktree, commondir, gitdir, rebase state) is protected inside
// it as in any git dir the grant makes writable (policy's protectGit).
func worktreeScope(repo *Repo, s *Scope) {
	s.Writable = append(s.Writable, Path{Path: repo.GitDir, Dir: true, Tool: "git", Beneath: repo.CommonDir,
		Why: "this linked worktree's own git state (index, HEAD, logs, ORIG_HEAD): files=write makes the worktree's state writable, its config.worktree, commondir and gitdir stay protected"})
}

// WorktreeScope returns what files=write makes writable for the linked
// worktree the workspace in.Workdir lies in, beyond the workspace itself
// (worktreeScope, branchScope), or nil when it lies in none; escalate
// offers files=write from it.
func WorktreeScope(in Input) []Path {
	repo, err := FindRepo(in.Workdir)
	if err != nil || repo == nil || !repo.DotGitIsFile || repo.GitDir == repo.CommonDir ||
		!within(repo.GitDir, filepath.Join(repo.CommonDir, "worktrees")) || repo.check() != nil {
		return nil
	}
	var s Scope
	worktreeScope(repo, &s)
	if !reftable(repo.CommonDir) {
		branchScope(repo, &s)
	}
	return s.Writable
}

// branchScope lets a linked worktree under files=write commit on the
// branch it has checked out, and on no other: in the common dir that
// branch's ref, the lock file git takes to replace it, and its reflog,
// each one name (Entry) in a directory that stays read-only, so that
// every other branch's ref, and a loose ref that would shadow a packed
// one, stays out of reach. A detached HEAD, a branch name git would
// refuse, or a ref directory that is missing or a link gets nothing.
func branchScope(repo *Repo, s *Scope) {
	common := repo.CommonDir
	branch, ok := checkedOutBranch(repo.GitDir)
	s.ReadOnly = append(s.ReadOnly, ReadOnly{Path: filepath.Join(common, "refs", "heads"), Tool: "git",
		Why: "the other local branches and their reflogs: a worker in a linked worktree commits on its own branch only"})
	if !ok {
		s.Notes = append(s.Notes, "git: this linked worktree has no branch checked out (a detached HEAD): commits move only its HEAD")
		return
	}
	ref := filepath.Join(common, "refs", "heads", filepath.FromSlash(branch))
	if !realDirs(common, filepath.Dir(ref)) {
		s.Notes = append(s.Notes, "git: "+filepath.Dir(ref)+" is missing or not a plain directory, so branch "+branch+" cannot be committed to from this worktree")
		return
	}
	why := "the ref of " + branch + ", the branch this linked worktree has checked out"
	s.Writable = append(s.Writable,
		Path{Path: ref, Entry: true, Tool: "git", Beneath: common, Why: why},
		Path{Path: ref + ".lock", Entry: true, Tool: "git", Beneath: common, Why: "the lock file git takes to update " + branch})
	if log := filepath.Join(common, "logs", "refs", "heads", filepath.FromSlash(branch)); realDirs(common, filepath.Dir(log)) {
		s.Writable = append(s.Writable, Path{Path: log, Entry: true, Tool: "git", Beneath: common, Why: "the reflog of " + branch})
	}
}

// checkedOutBranch returns the branch gitDir's HEAD names ("ref:
// refs/heads/NAME"), when its name is one git accepts.
func checkedOutBranch(gitDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil || len(b) > 4096 {
		return "", false
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref:")
	if !ok {
		return "", false
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(rest), "refs/heads/")
	return name, ok && validBranch(name)
}

// validBranch is the part of git's check_refname_format that matters
// for a path: no empty, "." or ".."-containing or dot-led component, none
// ending in ".lock", no control characters, backslashes or the other
// characters git refuses.
func validBranch(name string) bool {
	if name == "" || len(name) > 1024 || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") || strings.Contains(c, "..") {
			return false
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	return !strings.Contains(name, "@{")
}

// realDirs reports whether dir and every directory between base and it
// are directories, none a symbolic link.
func realDirs(base, dir string) bool {
	for d := dir; within(d, base); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			return false
		}
		if d == base {
			return true
		}
	}
	return false
}

// gitShim points git at the quarantine q, through the shim (see
// gitshim.go) when wrun can serve as one, else for every git command.
func gitShim(in Input, common, q string, s *Scope) bool {
	realGit := lookPathIn("git", in.Getenv("PATH"))
	if in.Self == "" || realGit == "" {
		s.Env = append(s.Env,
			EnvVar{Name: "GIT_OBJECT_DIRECTORY", Value: q, Why: "new git objects go to the quarantine"},
			EnvVar{Name: "GIT_ALTERNATE_OBJECT_DIRECTORIES", Value: filepath.Join(common, "objects"), Why: "the repository's own objects, read-only"})
		s.Notes = append(s.Notes, "git: every git command of the child uses the quarantine of "+common+", also in other repositories (wrun cannot serve as a git shim here)")
		return false
	}
	dir := shimDir(in)
	s.Prepare = append(s.Prepare, Step{Kind: StepGitShim, Dir: dir, Target: in.Self,
		Why: "git, as a link to wrun: it sends the objects of git commands on this repository (and only those) to the quarantine"})
	path := dir
	if p := in.Getenv("PATH"); p != "" {
		path += string(filepath.ListSeparator) + p
	}
	s.Env = append(s.Env,
		EnvVar{Name: "PATH", Value: path, Why: "git runs through wrun's shim, which picks the object directory per repository"},
		EnvVar{Name: EnvGitReal, Value: realGit, Why: "the git the shim runs"},
		EnvVar{Name: EnvGitCommonDir, Value: common, Why: "the repository whose git commands use the quarantine"},
		EnvVar{Name: EnvGitQuarantine, Value: q, Why: "new git objects of that repository go to the quarantine (GIT_OBJECT_DIRECTORY, set by the shim)"})
	if !in.WorkspaceWritable {
		// files=write (a linked worktree's worker) may push.
		s.Env = append(s.Env,
			EnvVar{Name: EnvGitNoPush, Value: "1", Why: "the git shim refuses git push and git send-pack (verify checks work, it does not publish it)"},
			EnvVar{Name: EnvGitReport, Value: PushReportDir(dir), Why: "where the git shim and the refusing remote helper record a refused push, which wrun reports whatever the command does with git's output"})
	}
	return true
}

// lookPathIn finds an executable named name in the directories of path.
func lookPathIn(name, path string) string {
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

const whyGitConfig = "git config: a child that writes it (core.fsmonitor, core.hooksPath, aliases, filters) runs code at the next unsandboxed git command"

// gitConfigEnv sets cfg through GIT_CONFIG_COUNT, KEY_n and VALUE_n,
// numbered from 0: the invoking environment's GIT_CONFIG_* never reach
// the child (policy's allowlist leaves them out: they can carry
// credentials, as http.extraHeader), so these are the child's only ones.
func gitConfigEnv(cfg [][2]string) []EnvVar {
	var out []EnvVar
	var set []string
	for i, kv := range cfg {
		why := "git: " + kv[0] + "=" + kv[1] + " (no automatic maintenance in the sandbox)"
		switch {
		case strings.HasSuffix(kv[0], ".pushInsteadOf"):
			why = "git: every push goes to wrun's refusing remote helper (verify checks work, it does not publish it)"
		case kv[0] == "core.gitProxy":
			why = "git: git:// remotes go through wrun's proxy (network=hosts), by a CONNECT"
		case kv[0] == "core.sshCommand":
			why = "git: ssh remotes are not reached under network=hosts; the helper says so"
		}
		out = append(out,
			EnvVar{Name: fmt.Sprintf("GIT_CONFIG_KEY_%d", i), Value: kv[0], Why: why},
			EnvVar{Name: fmt.Sprintf("GIT_CONFIG_VALUE_%d", i), Value: kv[1], Why: why})
		set = append(set, kv[0]+"="+kv[1])
	}
	return append(out, EnvVar{Name: "GIT_CONFIG_COUNT", Value: strconv.Itoa(len(cfg)),
		Why: "git: " + strings.Join(set, ", ") + " for every git command of the child"})
}

// runID names this run's quarantine: its RunID, else its private temp
// dir's base name; "RUN" stands for it when only explaining.
func runID(in Input) string {
	if validID(in.RunID) {
		return in.RunID
	}
	if id := filepath.Base(in.TempDir); in.TempDir != "" && validID(id) {
		return id
	}
	return "RUN"
}

// check verifies that the repository really is one before anything in it
// is made writable: the git dir and common dir look like git's (HEAD, refs/
// and objects/, none a symbolic link), and a .git file — which the
// repository's content controls — is answered by the git dir it names: a
// linked worktree's gitdir file points back at it, or a submodule's
// core.worktree names this working tree. A .git file saying
// "gitdir: /home/user" grants nothing.
func (r *Repo) check() error {
	for _, d := range []string{r.CommonDir, r.GitDir} {
		for _, name := range []string{"HEAD", "refs", "objects"} {
			if d == r.GitDir && d != r.CommonDir && name != "HEAD" {
				continue // a linked worktree's git dir has HEAD only
			}
			fi, err := os.Lstat(filepath.Join(d, name))
			if err != nil || fi.Mode()&os.ModeSymlink != 0 || (name == "HEAD") == fi.IsDir() {
				return fmt.Errorf("%s does not look like a git directory (%s)", d, name)
			}
		}
	}
	// What verify makes writable must not be a link (the kernel refuses
	// to follow one anyway; this says why instead of refusing the run).
	for _, p := range []string{filepath.Join(r.GitDir, "FETCH_HEAD"), filepath.Join(r.CommonDir, "logs"), filepath.Join(r.CommonDir, "logs", "refs")} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symbolic link", p)
		}
	}
	return r.Answers()
}

// Answers reports whether the git dir a .git file names answers it (nil
// for a .git directory, a bare repository): a linked worktree's gitdir
// file points back at the .git file, or a submodule's core.worktree names
// this working tree. The .git file is the repository's content: a
// "gitdir: /home/user/other-repo" it holds names a git dir that does not
// answer, and grants nothing.
func (r *Repo) Answers() error {
	if !r.DotGitIsFile {
		return nil
	}
	if b, err := os.ReadFile(filepath.Join(r.GitDir, "gitdir")); err == nil {
		back := strings.TrimSpace(string(b))
		if !filepath.IsAbs(back) {
			back = filepath.Join(r.GitDir, back)
		}
		if sameFile(back, r.DotGit) && within(r.GitDir, filepath.Join(r.CommonDir, "worktrees")) {
			return nil
		}
		return fmt.Errorf("%s names %s, whose gitdir file does not point back at it (git worktree repair mends that)", r.DotGit, r.GitDir)
	}
	if wt, ok := gitConfigValue(filepath.Join(r.GitDir, "config"), "core", "worktree"); ok {
		if !filepath.IsAbs(wt) {
			wt = filepath.Join(r.GitDir, wt)
		}
		if sameFile(wt, r.WorkTree) {
			return nil
		}
	}
	return fmt.Errorf("%s names %s, which is neither a linked worktree nor a submodule of this working tree", r.DotGit, r.GitDir)
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
