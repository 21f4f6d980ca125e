package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What the child reads is named, not "everything but holes": the system's
// own directories (programs, libraries, configuration, the kernel's
// views), the workspace, the private temp dir, the toolchains and the
// directories on PATH, the files it holds open, wrun itself, the command
// it was asked to run, and what --allow-read names. Everything else
// (/tmp, /var/tmp, /home, /root, /srv, /mnt, /media, most of /var and
// /run, another run's temp dir) is not readable, whatever a search would
// have found there: what the child may read does not depend on where a
// search looked.
//
// Inside the system's directories nothing is searched, with one
// exception: as root, whose child reads every file root owns whatever its
// mode, /etc is searched completely for files no other user may read
// (/etc/shadow, ssh host keys, TLS private keys), which are hidden
// (ScanRoots). /usr, /opt and the other system directories are assumed to
// hold nothing private: package managers install them readable by all,
// and a private file put there by hand is readable by a root child.

// ReadRoot is a directory of the system the child may read.
type ReadRoot struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Why the system's directories are readable.
const (
	whySysPrograms = "programs and libraries of the system, readable by every user"
	whySysEtc      = "the system's configuration every program reads (users, hosts, TLS trust, the dynamic linker's cache); as root, its files no other user may read are hidden"
	whySysOpt      = "software installed outside the package manager's tree (/opt, Nix, Guix, snaps), readable by every user"
	whySysKernel   = "the kernel's views of processes and devices (/proc, /sys): what the kernel lets the child see there, it checks itself"
	whyResolver    = "the name server configuration /etc/resolv.conf leads to"
)

// SystemRoots returns the system directories the child reads on goos. On
// Linux: /usr, /bin, /sbin, /lib*, /etc, /opt, /nix, /gnu, /snap, /proc,
// /sys, and where /etc/resolv.conf leads (systemd-resolved's, NetworkManager's
// or resolvconf's file under /run); the few /dev nodes are rules of
// their own (Compute). Elsewhere (macOS) the whole file system, less the
// hidden paths, as before: which system directories a macOS program needs
// is decided with the macOS backend.
func SystemRoots(goos string) []ReadRoot {
	if goos != "linux" {
		return []ReadRoot{{Path: "/", Why: "the whole file system is readable, except the hidden paths"}}
	}
	roots := []ReadRoot{
		{"/usr", whySysPrograms}, {"/bin", whySysPrograms}, {"/sbin", whySysPrograms},
		{"/lib", whySysPrograms}, {"/lib32", whySysPrograms}, {"/lib64", whySysPrograms}, {"/libx32", whySysPrograms},
		{"/etc", whySysEtc},
		{"/opt", whySysOpt}, {"/nix", whySysOpt}, {"/gnu", whySysOpt}, {"/snap", whySysOpt},
		{"/proc", whySysKernel}, {"/sys", whySysKernel},
	}
	if r := resolverRoot("/etc/resolv.conf", roots); r != "" {
		roots = append(roots, ReadRoot{r, whyResolver})
	}
	return roots
}

// resolverRoot returns where the name server configuration conf leads
// when that lies outside roots ("" otherwise): the directory holding it
// (its daemon replaces the file by renaming a new one over it), or the
// file alone where that directory is a top-level one (/run itself).
func resolverRoot(conf string, roots []ReadRoot) string {
	target, err := filepath.EvalSymlinks(conf)
	if err != nil || inRoots(target, roots) {
		return ""
	}
	if dir := filepath.Dir(target); !topLevel(dir) {
		return dir
	}
	return target
}

// inRoots reports whether path lies in one of roots.
func inRoots(path string, roots []ReadRoot) bool {
	for _, r := range roots {
		if Within(path, r.Path) {
			return true
		}
	}
	return false
}

// topLevel reports whether path is / or a directory directly in it.
func topLevel(path string) bool {
	path = filepath.Clean(path)
	return path == "/" || !strings.Contains(path[1:], "/")
}

// everyones are the directories that hold everyone's files: a variable
// or a repository that names one (GOPATH=/tmp, a git repository at /)
// opens nothing by itself; --allow-read does. (A project or toolchain at
// another top-level directory, /go or /app in a container, is read as
// named.)
var everyones = []string{"/", "/tmp", "/var", "/var/tmp", "/dev", "/dev/shm", "/home", "/root", "/run", "/srv", "/mnt", "/media", "/boot"}

// shared reports whether path is one of everyones, or holds one of homes.
func shared(path string, homes []string) bool {
	path = filepath.Clean(path)
	return slices.Contains(everyones, path) || slices.ContainsFunc(homes, func(h string) bool { return Within(h, path) })
}

// whyUnnamed says why a top-level directory no rule names is hidden.
const whyUnnamed = "no rule names it: the child reads the system's directories, the workspace and its project, its temp dir, the toolchains and PATH, and what --allow-read names"

// unnamedTop returns a hole for each directory directly in / that no
// readable rule holds (/tmp, /home, /var, /srv, ...): Landlock leaves
// them unreadable without it, having no rule there, but where a view of
// the file system is the boundary (no Landlock) the hole is what hides
// them, and explain and the denials name them. A rule inside one (the
// temp dir in /tmp, a toolchain in /home) is an explicit grant the hole
// keeps. One that is a hole already (the home, /dev) is left as it is.
func unnamedTop(rules []Rule, holes []Hole) []Hole {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil
	}
	var out []Hole
	for _, e := range ents {
		if !e.IsDir() { // links (/bin -> usr/bin) lead to where rules are
			continue
		}
		dir := "/" + e.Name()
		if slices.ContainsFunc(holes, func(h Hole) bool { return h.Path == dir }) ||
			slices.ContainsFunc(rules, func(r Rule) bool { return r.Access&ReadFile != 0 && Within(dir, r.Path) }) {
			continue
		}
		// Reading withheld, not writing: no rule makes it writable either,
		// and a refused write there is one --allow-write may open.
		out = append(out, Hole{Path: dir, Withheld: ReadExec, Why: whyUnnamed})
	}
	return out
}
